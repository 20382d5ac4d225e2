"""Do 2-process runs always exit? `accelerate launch --multi_gpu --num_processes 2` on CPU (gloo), again and
again, next to processes that keep the cores busy.

A rank that finished its work and then waited forever at exit was seen only on a loaded machine (issue 10:
DDP's reducer, freed after the process group was destroyed, blocked in `~ProcessGroupGloo`). Each run is a
tiny training through `train.py`, cycling over the paths that own a process group: plain DDP training, DP-SGD
(Opacus) and the downstream classifier. A run fails when it has not exited 0 within `--timeout` seconds; a
run still going then gets every rank's stack printed (faulthandler; py-spy's native frames where installed)
before it is killed. Launches go through the tests' `RankLauncher` (tests/conftest.py), so the bench and the
2-process tests run the same way.

    python bench/stress_ddp.py [--runs 20] [--modes plain,dp,classify] [--burners 2] [--timeout 240]

The last line is `ddp_exit_failures: N` (runs that did not exit 0 in time; target 0).
"""
from __future__ import annotations

import argparse
import collections
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import torch  # noqa: E402
from conftest import RankLauncher  # noqa: E402
from transformers import AutoConfig, AutoModelForMaskedLM, AutoTokenizer  # noqa: E402

from ppmlm.models import default_model_path  # noqa: E402

TINY = {"model_type": "bert", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
        "intermediate_size": 64}
TINY_OVERRIDE = "+model.config={" + ", ".join(f"{key}: {value}" for key, value in TINY.items()) + "}"


def overrides(mode: str, work: Path, run_dir: Path) -> list[str]:
    """The 2-process tests' settings (tests/test_training.py, tests/test_dp.py, tests/test_classify.py)."""
    if mode == "classify":
        return ["recipe=classify", "data.synth_users=6", "classify.max_length=32", "classify.batch_size=4",
                "classify.epochs=2", f"model.name_or_path={work / 'checkpoint'}", f"output_dir={run_dir}"]
    common = [TINY_OVERRIDE, "data.synth_users=10", "train.max_length=64", "train.epochs=1", "blacklist.ner=none",
              "blacklist.spans_from=phi", f"blacklist.cache_dir={work / 'cache'}", "audit.enabled=false",
              f"output_dir={run_dir}"]
    if mode == "dp":
        return [*common, "recipe=dp", "train.batch_size=6", "train.dp.noise_multiplier=0.8",
                "train.dp.physical_batch_size=2", "train.dp.max_chunks_per_user=8"]
    return [*common, "train.batch_size=2"]


def tiny_checkpoint(directory: Path) -> None:
    """A masked-LM checkpoint as training writes one, for the classifier runs."""
    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    torch.manual_seed(0)
    AutoModelForMaskedLM.from_config(AutoConfig.for_model(vocab_size=len(tokenizer), **TINY)).save_pretrained(directory)
    tokenizer.save_pretrained(directory)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--modes", default="plain,dp,classify", help="comma-separated, cycled: plain, dp, classify")
    parser.add_argument("--burners", type=int, default=2, help="processes spinning on the CPU during the runs")
    parser.add_argument("--timeout", type=float, default=240, help="seconds for one launch to exit")
    args = parser.parse_args()
    modes = args.modes.split(",")
    unknown = set(modes) - {"plain", "dp", "classify"}
    if unknown:
        parser.error(f"--modes: unknown {sorted(unknown)}")

    work = Path(tempfile.mkdtemp(prefix="stress_ddp-"))
    if "classify" in modes:
        tiny_checkpoint(work / "checkpoint")
    launcher = RankLauncher(work, processes=2, timeout=args.timeout)
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.burners)]
    seconds, failures, leftovers = collections.defaultdict(list), collections.Counter(), 0
    start = time.perf_counter()
    try:
        for run in range(args.runs):
            mode = modes[run % len(modes)]
            run_dir = work / f"run-{run}"
            done = launcher.launch(ROOT / "train.py", *overrides(mode, work, run_dir))
            seconds[mode].append(done.seconds)
            left = [threads for threads in launcher.gloo_threads_left() if threads]
            leftovers += bool(left)
            ok = done.returncode == 0
            failures[mode] += not ok
            print(f"run {run + 1}/{args.runs} {mode}: "
                  + ("exit 0" if ok else "TIMED OUT" if done.timed_out else f"exit {done.returncode}")
                  + f" in {done.seconds:.1f} s" + (f"; gloo threads left at exit: {left}" if left else ""), flush=True)
            if not ok:
                print(done.report(), flush=True)
            shutil.rmtree(run_dir, ignore_errors=True)
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    wall = time.perf_counter() - start
    shutil.rmtree(work, ignore_errors=True)

    print(f"\n{args.runs} runs of 2 processes next to {args.burners} CPU burners on {len(os.sched_getaffinity(0))} cores, "
          f"timeout {args.timeout:.0f} s: {wall:.0f} s in all")
    for mode, times in seconds.items():
        print(f"  {mode}: {len(times)} runs, {failures[mode]} failed; seconds median {statistics.median(times):.1f}, "
              f"max {max(times):.1f}")
    print(f"runs with gloo threads still alive once train.py returned: {leftovers}")
    print(f"ddp_exit_failures: {sum(failures.values())}")


if __name__ == "__main__":
    main()
