"""How a multi-process run ends: one teardown order on every rank, for every path that prepares a model.

The gloo process group is a C++ object with worker threads and one TCP connection per peer, served by a
loop thread; its destructor (`~ProcessGroupGloo`) stops the workers and closes each connection, waiting for
the loop thread to acknowledge each close. It runs when the group's last reference goes, and
`destroy_process_group` (accelerate's `end_training`) drops only torch.distributed's own references. DDP
holds more: its C++ `Reducer` and the wrapper's `process_group`, alive as long as the DDP module is: in the
trainer, the classifier's `model`, accelerate's `_models`, all locals of the function that trained. Ended
first, the group was really destroyed later, when those locals went with `train()`'s return: inside
`~Reducer`, on the main thread, which pybind11's deallocation leaves holding the GIL. Under load that
destructor never returned (issue 10; reproduced in 2 of 30 runs of bench/stress_ddp.py next to 6 CPU
burners): rank 0 gone, rank 1's main thread in `std::thread::join` in `~ProcessGroupGloo` from `~Reducer`,
and one more Python thread state with no Python frame, a C++ thread waiting for that GIL. A gloo worker
that still needs the GIL to finish its last work (presumably to free a tensor whose Python object it
ended up owning) cannot be joined by a thread that holds it: a deadlock, whenever a worker lags on a loaded machine.

So `end_processes` fixes the order: (1) the caller drops what it holds of the prepared objects (its
trainer's `close()`, or `del`); (2) accelerate's references to them go too (`free_memory` and the objects
registered for checkpointing), then a collection, for reference cycles such as Opacus's hooks; (3) a
barrier: every rank is done with the group, no collective is in flight, and while it waits the GIL is free
for any worker finishing an earlier one; (4) the group is destroyed, and with no other reference left its
destructor runs there, its last work a barrier that holds no Python object. A reference still held is
reported rather than left to hang a later exit. A run nested in another (the audit's reference model,
trained inside `train()`) leaves the group to the outer run: `nested_run`.

`torch.distributed.nn` is imported here, before any group exists: its functions take `group=group.WORLD`
as a default argument, evaluated at import. Imported after the group exists (DDP imports it when it wraps
its first model), they hold the group until interpreter exit, where tearing its threads down can abort a
rank ("terminate called without an active exception").
"""
from __future__ import annotations

import contextlib
import gc
import sys
import warnings

import torch.distributed
import torch.distributed.nn  # noqa: F401  (imported for its side effect, see above)

_nested = 0


@contextlib.contextmanager
def nested_run():
    """A training run inside another: its `end_processes` keeps the process group, which the outer run uses."""
    global _nested
    _nested += 1
    try:
        yield
    finally:
        _nested -= 1


def end_processes(accelerator) -> None:
    """Release what accelerate prepared, wait for every rank, then destroy the process group (see above).

    Call it on every rank once training is over, after dropping your own references to the prepared
    objects; with one process it only releases them (there is no group).
    """
    accelerator.free_memory()  # prepared models (DDP), optimizers, schedulers, dataloaders; collects
    accelerator._custom_objects.clear()  # register_for_checkpointing's objects, which free_memory keeps
    gc.collect()
    accelerator.wait_for_everyone()
    if _nested:
        for tracker in accelerator.trackers:  # end_training, but for destroying the group
            tracker.finish()
        return
    group = torch.distributed.group.WORLD if torch.distributed.is_initialized() else None
    accelerator.end_training()
    if group is not None and sys.getrefcount(group) > 2:  # 2: `group` and getrefcount's own argument
        warnings.warn(f"the process group is still referenced {sys.getrefcount(group) - 2} time(s) after "
                      "destroy_process_group (a DDP module still alive?): it will be destroyed whenever that "
                      "reference goes, which can hang or abort this rank's exit", RuntimeWarning, stacklevel=2)
