"""Shared fixtures: tokenizers and tiny models built offline, never downloaded."""
from __future__ import annotations

import atexit
import contextlib
import faulthandler
import functools
import gc
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import torch
from accelerate.state import AcceleratorState, GradientState

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Tiny models run several times faster on one thread, and a second thread on a busy two-core machine (CI's, or
# beside a training) makes every OpenMP barrier wait for a core: a step then takes 10-15x longer. The tests and
# every process they start (training scripts, accelerate ranks, the wheel's commands) use one thread.
os.environ["OMP_NUM_THREADS"] = "1"
torch.set_num_threads(1)
# torch.compile's C++ kernels and precompiled headers are cached without the ATen kernel set in their key: a cache
# filled under native kernels fails to compile under ATEN_CPU_CAPABILITY=default ("'at::vec' has not been declared").
# One cache per kernel set (the default place, /tmp/torchinductor_USER, unless the caller chose one).
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(
    tempfile.gettempdir(), f"torchinductor_{os.getuid()}_{os.environ.get('ATEN_CPU_CAPABILITY', 'native')}"))

ROOT = Path(__file__).resolve().parents[1]


def checkout_first_on_path() -> str:
    """PYTHONPATH for a child process that imports this checkout's ppmlm, keeping the caller's entries (an
    install on PYTHONPATH, as on a machine where packages are carried, must still import)."""
    return os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))


_ROBERTA_TRAINING_TEXT = [
    "The patient was seen on 7/22 by Dr. Smith at Mercy Hospital; pain in the left knee.",
    "Blood pressure 120/80, heart rate 72. Denies chest pain, shortness of breath or fever.",
    "PT IS A 65 YO M W/ HX OF CHF, COPD. SEEN BY DR JONES. CALL (555) 123-4567.",
    "Patient reports intermittent headaches since March; neurology referral placed.",
    "Resumed antibiotics for pneumonia; will follow up with cardiology in two weeks.",
]


TINY_MODEL = ("+model.config={model_type: bert, hidden_size: 32, num_hidden_layers: 2, num_attention_heads: 2, "
              "intermediate_size: 64}")


@functools.cache
def small_corpus() -> Path:
    """Ten synthetic patients, two short notes each, gold spans in `phi` and a `label`: about 40 training chunks
    of 64 tokens, so that an end-to-end run trains tens of chunks, not hundreds (the embedded default's 10
    patients give 200). A JSONL file for `data.path=`, written once per test session."""
    from ppmlm.corpus.clinical import generate_corpus
    from ppmlm.corpus.engine import write_jsonl

    notes, per_user = [], {}
    for record in generate_corpus(10, seed=42):
        per_user[record["user_id"]] = per_user.get(record["user_id"], 0) + 1
        if per_user[record["user_id"]] > 2:
            continue
        cut = record["text"].rfind("\n", 0, 500)
        cut = cut if cut > 0 else 500
        phi = [span for span in record["phi"] if span["end"] <= cut]
        notes.append({**record, "text": record["text"][:cut], "phi": phi})
    directory = Path(tempfile.mkdtemp(prefix="ppmlm-tests-"))
    atexit.register(shutil.rmtree, directory, True)
    write_jsonl(notes, directory / "small_corpus.jsonl")
    return directory / "small_corpus.jsonl"


@pytest.fixture(scope="session")
def bert_tokenizer():
    """The WordPiece vocabulary of the offline warm-start model (BERT uncased vocabulary)."""
    from transformers import AutoTokenizer

    from ppmlm.models import default_model_path

    return AutoTokenizer.from_pretrained(default_model_path())


@pytest.fixture(scope="session")
def roberta_tokenizer(tmp_path_factory):
    """A small byte-level BPE tokenizer in RoBERTa format, trained here on clinical-style text."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import AutoTokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        _ROBERTA_TRAINING_TEXT * 20,
        vocab_size=400,
        min_frequency=1,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
    )
    directory = tmp_path_factory.mktemp("roberta_tokenizer")
    bpe.save_model(str(directory))
    (directory / "config.json").write_text('{"model_type": "roberta"}')
    return AutoTokenizer.from_pretrained(str(directory))


_RANK_WRAPPER = textwrap.dedent('''
    """One rank of a launch, run under watch: runs the script argv[1] with the arguments after it.

    SIGUSR1 writes every thread's Python stack to <this file>.rank<R>.stacks: faulthandler needs no GIL, so a
    rank blocked in C++ with the GIL held still answers. Once the script has returned, the rank records in
    <this file>.rank<R> the gloo threads it still has: any left are torn down during interpreter exit, where
    they can abort the process after a successful run."""
    import atexit, faulthandler, os, runpy, signal, sys

    base = f"{__file__}.rank{os.environ['RANK']}"
    faulthandler.register(signal.SIGUSR1, file=open(base + ".stacks", "w"), all_threads=True)

    def thread_name(task):
        try:
            return open(f"/proc/self/task/{task}/comm").read().strip()
        except FileNotFoundError:  # a thread that ended meanwhile
            return ""

    def record():
        threads = [thread_name(task) for task in os.listdir("/proc/self/task")]
        with open(base, "w") as out:
            out.write(",".join(t for t in threads if "gloo" in t))

    script, sys.argv = sys.argv[1], sys.argv[1:]
    atexit.register(record)
    runpy.run_path(script, run_name="__main__")
''')


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Launch:
    """What one `accelerate launch` left: exit status (None: killed at the deadline), output, per-rank stacks."""

    def __init__(self, command, returncode, output, seconds, stacks):
        self.command, self.returncode, self.output, self.seconds, self.stacks = command, returncode, output, seconds, stacks

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    def report(self, tail: int = 6000) -> str:
        status = (f"no exit within {self.seconds:.0f} s" if self.timed_out
                  else f"exit {self.returncode} after {self.seconds:.0f} s")
        ranks = "".join(f"\n--- {name} ---\n{text}" for name, text in self.stacks.items())
        return (f"{' '.join(map(str, self.command))}: {status}{ranks}\n"
                f"--- output (last {tail} characters) ---\n{self.output[-tail:]}")


class RankLauncher:
    """`accelerate launch --multi_gpu --num_processes N` on CPU (gloo), every rank under `_RANK_WRAPPER`.

    The ranks see no GPU whatever the machine has (on a one-GPU machine rank 1 would ask for a second), so the
    tests hold on machines with none, one or several.

    A launch that has not exited by the deadline gets every rank's stack (faulthandler on SIGUSR1, and
    `py-spy dump --native` where installed, which shows the C++ frames), then all its processes are killed.
    torchrun starts each rank in a session of its own, so killing the launcher would orphan a hung rank (and
    a pipe it holds would block the reader): ranks are found by a marker in their environment, and output
    goes to a file. Linux only (/proc).
    """

    def __init__(self, directory: Path, processes: int = 2, timeout: float = 170):
        self.directory, self.processes, self.timeout = Path(directory), processes, timeout
        self.wrapper = self.directory / "rank_wrapper.py"
        self.wrapper.write_text(_RANK_WRAPPER)
        self.launches = 0

    def command(self, script, *args) -> list[str]:
        return [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes",
                str(self.processes), "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
                "--main_process_port", str(free_port()),  # not 29500: other launches may share the machine
                str(self.wrapper), str(script), *map(str, args)]

    def launch(self, script, *args, cwd=ROOT, env=None) -> Launch:
        self.launches += 1
        for old in self.directory.glob(f"{self.wrapper.name}.rank*"):
            old.unlink()
        marker = f"{os.getpid()}-{id(self)}-{self.launches}"
        command = self.command(script, *args)
        log = self.directory / f"launch-{self.launches}.log"
        environment = dict(os.environ if env is None else env, PYTHONUNBUFFERED="1", PYTHONFAULTHANDLER="1",
                           PPMLM_LAUNCH=marker, CUDA_VISIBLE_DEVICES="")
        start = time.perf_counter()
        with log.open("w") as out:
            launcher = subprocess.Popen(command, cwd=cwd, env=environment, stdout=out, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
            try:
                returncode = launcher.wait(timeout=self.timeout)
                stacks = {}
            except subprocess.TimeoutExpired:
                returncode, stacks = None, self._dump_and_kill(launcher, marker)
        return Launch(command, returncode, log.read_text(errors="replace"), time.perf_counter() - start, stacks)

    def _dump_and_kill(self, launcher, marker: str) -> dict[str, str]:
        ranks = _processes_with(f"PPMLM_LAUNCH={marker}")
        for pid in ranks:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGUSR1)
        time.sleep(2)  # faulthandler writes at once; the wait covers a loaded machine
        stacks = {}
        for rank in map(str, range(self.processes)):
            pids = [pid for pid, of in ranks.items() if of == rank]
            if not pids:
                stacks[f"rank {rank}"] = "exited" if self._read(f"rank{rank}") is not None else "no process, no exit record"
            for pid in pids:
                stacks[f"rank {rank} (pid {pid})"] = (self._read(f"rank{rank}.stacks") or "") + native_stacks(pid)
        stacks[f"launcher (pid {launcher.pid})"] = native_stacks(launcher.pid) or "(py-spy not installed)"
        for pid in [*ranks, launcher.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        launcher.wait()
        return stacks

    def _read(self, suffix: str) -> str | None:
        path = self.directory / f"{self.wrapper.name}.{suffix}"
        return path.read_text(errors="replace") if path.exists() else None

    def run(self, script, *args, **kwargs) -> str:
        """Launch and return the output; fail the test, with every rank's stack, on a hang or a failure."""
        done = self.launch(script, *args, **kwargs)
        if done.returncode != 0:
            pytest.fail(done.report(), pytrace=False)
        return done.output

    def gloo_threads_left(self) -> list[str]:
        """Per rank, the gloo threads still alive once the launched script had returned (empty: none)."""
        return [self._read(f"rank{rank}") for rank in range(self.processes)]


def native_stacks(pid: int) -> str:
    """Every thread's stack with its C++ frames, by py-spy where installed (else nothing)."""
    if not shutil.which("py-spy"):
        return ""
    try:
        return subprocess.run(["py-spy", "dump", "--native", "--pid", str(pid)], capture_output=True, text=True,
                              timeout=60).stdout
    except subprocess.TimeoutExpired:
        return "py-spy: no answer in 60 s\n"


def _processes_with(marker: str) -> dict[int, str]:
    """pid -> RANK of the processes whose environment holds `marker` (the launcher has no RANK)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile, or not ours
            continue
        if marker.encode() in environ:
            rank = next((v[5:].decode() for v in environ if v.startswith(b"RANK=")), None)
            if rank is not None:
                found[int(entry.name)] = rank
    return found


def start_watched(command: list, log: Path, **popen) -> subprocess.Popen:
    """`command` started in a session of its own with its output (stdout and stderr) going to `log`, and Python's
    faulthandler on, so that `finish_watched` can show where it hung."""
    env = dict(popen.pop("env", None) or os.environ, PYTHONFAULTHANDLER="1", PYTHONUNBUFFERED="1")
    with open(log, "w") as out:
        process = subprocess.Popen(list(map(str, command)), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=env, start_new_session=True, **popen)
    process.log = Path(log)
    return process


def finish_watched(process: subprocess.Popen, timeout: float) -> str:
    """The output of `process` once it has exited. Past `timeout` seconds the test fails with every thread's Python
    stack (SIGABRT makes faulthandler write them into the output; py-spy adds the C++ frames where installed),
    and the process and whatever it started are killed: a hung subprocess never hangs the suite."""
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        native = native_stacks(process.pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGABRT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        output = process.log.read_text(errors="replace")
        pytest.fail(f"{' '.join(process.args)}: no exit within {timeout:.0f} s; its output, stacks last:\n"
                    f"{output[-8000:]}\n{native}", pytrace=False)
    with contextlib.suppress(ProcessLookupError):  # a worker it left behind
        os.killpg(process.pid, signal.SIGKILL)
    return process.log.read_text(errors="replace")


def train_killed_in_epoch_2(run_dir: Path, overrides: list, timeout: float = 600) -> None:
    """What `python train.py *overrides` (output_dir=`run_dir`) leaves when SIGKILLed at its first optimizer step once
    the checkpoint of epoch 1 is complete: a kill in the middle of epoch 2 on a fast machine as on a slow one. The
    run is a child forked from this process, which has imported torch and ppmlm already (a new interpreter spent
    about 12 s of CPU on that), and trains as train.py does (train_from_overrides), its output in
    `run_dir`.killed.log; past `timeout` it writes its stacks there and the test fails."""
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    from ppmlm.pipeline import train_from_overrides

    epoch_1 = run_dir / "checkpoints" / "epoch-1" / "complete"
    log = Path(f"{run_dir}.killed.log")
    pid = os.fork()
    if pid == 0:  # the child never returns into pytest: killed in epoch 2, or it exits
        try:
            out = open(log, "w", buffering=1)
            os.dup2(out.fileno(), 1)
            os.dup2(out.fileno(), 2)
            sys.stdout = sys.stderr = out
            os.chdir(ROOT)
            faulthandler.dump_traceback_later(timeout, exit=True, file=out)

            def kill_in_epoch_2(optimizer, args, kwargs):
                if epoch_1.exists():
                    os.kill(os.getpid(), signal.SIGKILL)

            register_optimizer_step_pre_hook(kill_in_epoch_2)
            train_from_overrides([*overrides, f"output_dir={run_dir}"])
        finally:
            os._exit(1)
    deadline = time.monotonic() + timeout + 30  # the child's faulthandler ends it first
    while not (ended := os.waitpid(pid, os.WNOHANG))[0]:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"the run killed in epoch 2 had not ended after {timeout:.0f} s:\n{log.read_text()[-8000:]}")
        time.sleep(0.2)
    code = os.waitstatus_to_exitcode(ended[1])
    assert code == -signal.SIGKILL, f"exit {code}, not killed in epoch 2:\n{log.read_text(errors='replace')[-4000:]}"
    assert epoch_1.exists() and not (run_dir / "checkpoints" / "epoch-2").exists()


def run_watched(command: list, log: Path, timeout: float, **popen) -> subprocess.CompletedProcess:
    """`command` run to its end under `finish_watched`: its exit status and output."""
    process = start_watched(command, log, **popen)
    output = finish_watched(process, timeout)
    return subprocess.CompletedProcess(process.args, process.returncode, output)


@pytest.fixture
def two_ranks(tmp_path):
    """Launches a script on 2 CPU processes; a hang fails the test within 3 minutes with every rank's stack."""
    return RankLauncher(tmp_path)


def pytest_collection_finish(session):
    """What collection imported (torch, transformers, spaCy, every test module: about half a million objects) lives
    as long as the process: frozen, it is left out of every later garbage collection. A training run ends with two
    full ones (ppmlm.training.distributed.end_processes, through accelerate's free_memory and its own), which took
    about 0.5 s each over those objects, and Python's own full collections walked them as well."""
    gc.collect()
    gc.freeze()


FILE_SECONDS = "ppmlm/file_seconds"  # pytest's cache: each test file's seconds in the last run that ran it
_file_seconds: dict[str, float] = {}


def _file(nodeid: str) -> str:
    return nodeid.split("::")[0]


def pytest_collection_modifyitems(config, items):
    """Under -n, longest files first. --dist=loadfile hands each worker a whole file at a time in the order the
    workers collected them (--no-loadscope-reorder: xdist's own order, most tests first, put the few long
    end-to-end files last), and the suite lasts until the last long file ends; started first, they end beside
    the short ones. The seconds are the last run's, from pytest's cache; a file without any (a fresh clone, a
    new file) goes first."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None or getattr(config, "cache", None) is None:
        return
    seconds = config.cache.get(FILE_SECONDS, {})
    first_seen = {}
    for item in items:
        first_seen.setdefault(_file(item.nodeid), len(first_seen))
    items.sort(key=lambda item: (-seconds.get(_file(item.nodeid), float("inf")), first_seen[_file(item.nodeid)]))


def pytest_runtest_logreport(report):
    """Each file's seconds (setup, call and teardown), summed where the reports arrive: in xdist's controller, or
    in the one process without -n."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        _file_seconds[_file(report.nodeid)] = _file_seconds.get(_file(report.nodeid), 0.0) + report.duration


def pytest_sessionfinish(session):
    """Records the seconds of the files this run ran; a run of a few files leaves the others' as they were."""
    cache = getattr(session.config, "cache", None)
    if cache is not None and _file_seconds and os.environ.get("PYTEST_XDIST_WORKER") is None:
        cache.set(FILE_SECONDS, {**cache.get(FILE_SECONDS, {}), **{f: round(s, 1) for f, s in _file_seconds.items()}})


@pytest.fixture(autouse=True)
def fresh_accelerator_state():
    """accelerate's state is one per process: a test that trains on the GPU would make the next test's
    `Accelerator(cpu=True)` fail ("AcceleratorState has already been initialized"), so each test starts afresh."""
    yield
    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()


FLOAT32_EPS = torch.finfo(torch.float32).eps


def assert_float32_close(got: torch.Tensor, want: torch.Tensor, magnitude, floor: float, what: str = "") -> None:
    """`got` and `want` compute one float32 value by other kernels or in another order (Opacus's einsum against
    autograd, packed against padded rows, another processor's kernels), so they differ by rounding: a few thousand
    epsilons of `magnitude`, the sum of the absolute values of the terms behind each entry (a tensor, or one
    number), and, where those terms themselves cancel to about 0, a few epsilons of `floor`, the largest magnitude
    upstream (a gradient that is 0 up to rounding carries the rounding of the activations it came through). A real
    fault is off by whole units of the magnitude."""
    tolerance = 4096 * FLOAT32_EPS * torch.as_tensor(magnitude, dtype=torch.float64) + 64 * FLOAT32_EPS * floor
    error = (got.double() - want.double()).abs()
    worst = int((error / tolerance).argmax())
    assert (error <= tolerance).all(), (f"{what}: off by {error.flatten()[worst]:.3g} at entry {worst}, beyond the "
                                        f"tolerance {torch.broadcast_to(tolerance, error.shape).flatten()[worst]:.3g}")


def word_tokenizer(directory, texts: list[str], extra: list[str] = ()):
    """A WordPiece tokenizer in `directory` whose vocabulary is the words of `texts` (split on spaces) and `extra`:
    every word one token, so that a tiny model memorizes within seconds."""
    from transformers import AutoTokenizer

    words = sorted({w for text in texts for w in text.split()} | set(extra))
    (directory / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    (directory / "config.json").write_text('{"model_type": "bert"}')
    return AutoTokenizer.from_pretrained(str(directory))


def memorize(model, features: list[dict], tokenizer, steps: int, masking_seed: int, draw_seed: int):
    """`model` trained with the collator and loss of training (plain masked LM) on random batches of 8 of
    `features` at a high rate, so that a tiny model memorizes them: the attack tests' target."""
    from ppmlm.masking.collator import PrivacyMaskingCollator
    from ppmlm.training.objective import MaskedLMLoss

    objective = MaskedLMLoss(model)
    optimizer = torch.optim.AdamW(objective.parameters(), lr=3e-3, fused=True)  # one kernel, not a dozen per parameter
    collator = PrivacyMaskingCollator(tokenizer, generator=torch.Generator().manual_seed(masking_seed))
    draw = torch.Generator().manual_seed(draw_seed)
    for _ in range(steps):
        batch = collator([features[i] for i in torch.randint(len(features), (8,), generator=draw).tolist()])
        objective(batch["input_ids"], batch["attention_mask"], batch["labels"]).mean().backward()
        optimizer.step()
        optimizer.zero_grad()
    return objective.model.eval()


def tagged(ner, text: str) -> list[tuple[str, str]]:
    """The (text, label) pairs an NER backend finds in one text: what the NER tests compare."""
    (spans,) = ner.spans([text])
    return [(text[span.start : span.end], span.label) for span in spans]
