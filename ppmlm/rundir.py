"""The directory of a training run: its layout, who may write into it, and whether a rerun may continue it.

The one reader and writer of the layout below: the training loop, the audit, `ppmlm push`, the benchmarks
and the notebooks all go through `RunDirectory`.

    .ppmlm-run            marker: this folder is a ppmlm run (its corpus fingerprint inside); we write into
                          no folder that holds other files without it
    .lock                 locked by the training that writes here (POSIX lock, released when it exits), taken
                          before anything else is read, built or written
    config.yaml           the resolved configuration; a resume must match it
    split.json            users per role (sensitive: user ids)
    blacklist.json        the blacklist's parameters and counts, never its terms
    metrics.jsonl         one line per logging window and per epoch end, for the steps that count
    checkpoints/epoch-N/  weights and tokenizer; `complete` written last; state/ for the last epoch only;
                          privacy.json (epsilon and its settings) for a DP run; warm_start.json (what the
                          public warm start it started from saw: sources, counts, a digest; never text)
    audit/                the per-epoch audit (epoch-N.json, report.html: ppmlm/audit/outputs.py)
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from pathlib import Path

from accelerate.utils import broadcast_object_list
from omegaconf import OmegaConf

from ppmlm.errors import ConfigError, RunInUseError
from ppmlm.files import COMPLETE, staging_path, write_atomically

MARKER = ".ppmlm-run"
WARM_START_RECORD = "warm_start.json"
LOCK = ".lock"
CLAIM_FILES = (LOCK, staging_path(Path(MARKER)).name)  # what a claim under way has written before its marker
# Keys a resumed run may change: where and how it logs, caches and parallelises, and the sharing policy
# (read at push time). Everything else shapes the weights or the audit of the epochs already written.
OPERATIONAL = ("resume", "allow_resume_changes", "output_dir", "train.tracker", "train.num_workers", "train.log_every",
               "blacklist.n_process", "blacklist.cache_dir", "audit.enabled", "audit.reference_cache_dir", "share.")


class RunDirectory:
    def __init__(self, path):
        self.path = Path(path)
        self._lock = None
        self._made: list[Path] = []  # what `claim` created (files, then folders): `withdraw` removes them

    @classmethod
    def of_checkpoint(cls, checkpoint) -> "RunDirectory | None":
        """The run a checkpoint directory belongs to (`<run>/checkpoints/epoch-N`), when it sits in one."""
        checkpoint = Path(checkpoint).resolve()
        run = cls(checkpoint.parent.parent)
        return run if checkpoint.parent.name == "checkpoints" and run.config.exists() else None

    @classmethod
    def find(cls, paths) -> list["RunDirectory"]:
        """The runs among `paths`: run directories themselves, or folders holding runs one level down."""
        runs = []
        for path in map(Path, paths):
            runs += [cls(path)] if cls(path).config.exists() else [cls(p.parent) for p in sorted(path.glob("*/config.yaml"))]
        return runs

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def config(self) -> Path:
        return self.path / "config.yaml"

    @property
    def split(self) -> Path:
        return self.path / "split.json"

    @property
    def blacklist_summary(self) -> Path:
        return self.path / "blacklist.json"

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints"

    @property
    def audit(self) -> Path:
        return self.path / "audit"

    @property
    def metrics(self) -> Path:
        return self.path / "metrics.jsonl"

    def checkpoint(self, epoch: int) -> Path:
        return self.checkpoints / f"epoch-{epoch}"

    def audit_of(self, epoch: int) -> Path:
        """The audit figures of epoch `epoch` (audit/epoch-N.json)."""
        return self.audit / f"epoch-{epoch}.json"

    def mark_complete(self, epoch: int) -> None:
        """Written last, once the checkpoint of `epoch` is whole."""
        (self.checkpoint(epoch) / COMPLETE).write_text(json.dumps({"epoch": epoch}))

    def complete_epochs(self) -> list[int]:
        return sorted(int(p.name.split("-")[1]) for p in self.checkpoints.glob("epoch-*")
                      if p.name.split("-")[1].isdigit() and (p / COMPLETE).exists())

    def is_ours(self) -> bool:
        """Our marker, or the files of a run written before the marker existed."""
        legacy = (self.path / "config.yaml").is_file() and (self.checkpoints.is_dir() or self.metrics.is_file())
        return (self.path / MARKER).is_file() or legacy

    def check_target(self, claim_under_way_ok: bool = True) -> None:
        """output_dir must be new, empty or a run of ours: never a file, never a folder of someone else's files.

        Every process of a training checks before the main one claims the folder, and `claim` checks again, strictly.
        A process that looks while the main one is claiming sees the claim's first files (the lock, the marker's
        staging copy), which are no one else's: before the claim they are ignored (`claim_under_way_ok`)."""
        where = f"output_dir={self.path}"
        if self.path.exists() and not self.path.is_dir():
            raise ConfigError(f"{where}: is a file, not a folder; choose a new folder for the run")
        if self.path.is_dir() and not self.is_ours():
            ignored = CLAIM_FILES if claim_under_way_ok else ()
            others = sorted(p.name for p in self.path.iterdir() if p.name not in ignored)
            if others:
                raise ConfigError(f"{where}: holds files that are not a ppmlm run ({', '.join(others[:3])}"
                                  f"{', ...' if len(others) > 3 else ''}); choose a new or empty folder")
        for parent in self.path.absolute().parents:
            if parent.exists():
                if not parent.is_dir():
                    raise ConfigError(f"{where}: {parent} is a file, not a folder")
                break

    def resume_point(self, resume) -> int:
        """The last complete checkpoint's epoch (0: start afresh), when resuming is asked for (true) or allowed (auto)."""
        epochs = [e for e in self.complete_epochs() if (self.checkpoint(e) / "state").exists()]
        if resume is True and not epochs:
            raise ConfigError(f"resume=true but {self.path} holds no complete checkpoint")
        if resume is False and epochs:
            raise ConfigError(f"resume=false but {self.path} already holds checkpoints: choose another output_dir, "
                              f"or resume=auto")
        return epochs[-1] if epochs else 0

    def check_same_settings(self, settings: dict, allow_changes: bool = False) -> list[str]:
        """The settings of a resumed run (its resolved configuration, as config.yaml records it) must be those it
        started with: else its checkpoints, metrics and audits would describe two trainings under one name.
        Returns the changes that `allow_changes` (allow_resume_changes) accepts."""
        recorded_path = self.path / "config.yaml"
        if not recorded_path.is_file():
            return []
        recorded = flatten_config(OmegaConf.to_container(OmegaConf.load(recorded_path), resolve=True))
        current = flatten_config(settings)
        changes = [f"{key}={_shown(recorded[key])} there, {_shown(current[key])} now"
                   for key in sorted(recorded.keys() & current.keys())
                   if recorded[key] != current[key] and not key.startswith(OPERATIONAL)]
        if changes and not allow_changes:
            raise ConfigError(f"output_dir={self.path} holds a run with other settings ({'; '.join(changes)}); resuming "
                              f"would mix two trainings: choose another output_dir, or add allow_resume_changes=true to "
                              f"continue it with the new settings (recorded in its metrics.jsonl)")
        return changes

    def check_same_corpus(self, fingerprint: str, allow_changes: bool) -> bool:
        """Whether the corpus changed since the run started (an error unless `allow_changes`)."""
        recorded = self._marker().get("corpus")
        changed = recorded is not None and recorded != fingerprint
        if changed and not allow_changes:
            raise ConfigError(f"output_dir={self.path} holds a run trained on another corpus (its texts, users or document "
                              f"ids differ): choose another output_dir, or add allow_resume_changes=true")
        return changed

    def record_corpus(self, fingerprint: str) -> None:
        """The fingerprint of the corpus the run trains on, in its marker once (what `check_same_corpus` reads)."""
        marker = self._marker()
        if marker.get("corpus") is None:
            write_atomically(self.path / MARKER, json.dumps(dict(marker, kind="ppmlm-run", corpus=fingerprint)) + "\n")

    def _marker(self) -> dict:
        marker = self.path / MARKER
        return json.loads(marker.read_text()) if marker.is_file() else {}

    def claim(self, accelerator) -> None:
        """Lock the directory and mark it as ours, before the run reads, builds or writes anything: a second
        training on the same folder fails at once, naming the first one's process, and leaves nothing behind
        (RunInUseError). The main process takes the lock; every process fails alike when it cannot."""
        problem = None
        if accelerator.is_main_process:
            try:
                self.check_target(claim_under_way_ok=False)
                self._lock_and_mark()
            except ConfigError as error:
                problem = (str(error), isinstance(error, RunInUseError))
        problem = broadcast_object_list([problem])[0]
        if problem is not None:
            message, in_use = problem
            raise (RunInUseError if in_use else ConfigError)(message)

    def _lock_and_mark(self) -> None:
        folders = [p for p in (self.path, *self.path.absolute().parents) if not p.exists()]
        lock = self.path / LOCK
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            files = [] if lock.exists() else [lock]
            handle = open(lock, "a+")
        except OSError as error:
            raise ConfigError(f"output_dir={self.path}: cannot write there ({error.strerror})") from None
        try:
            fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise RunInUseError(f"output_dir={self.path} is in use by another training ({self.owner()}); wait for it "
                                f"to end, or choose another output_dir") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        handle.flush()
        self._lock = handle
        marker = self.path / MARKER
        if not marker.is_file():
            write_atomically(marker, json.dumps({"kind": "ppmlm-run", "corpus": None}) + "\n")  # corpus: record_corpus
            files.append(marker)
        self._made = files + folders

    def owner(self) -> str:
        """The training that holds (or last held) the lock, as it wrote itself there."""
        try:
            return (self.path / LOCK).read_text().strip() or "another process"
        except OSError:
            return "another process"

    @contextlib.contextmanager
    def withdrawn_on_failure(self):
        """The run's preparation between `claim` and its first file of its own: a failure there (a bad corpus, too
        few users, Ctrl-C) leaves the folder as the claim found it."""
        try:
            yield
        except BaseException:
            self.withdraw()
            raise

    def withdraw(self) -> None:
        """Release the lock, removing what `claim` created when the folder holds nothing else (a run that wrote a
        file, canaries.json say, stays marked as ours so that a rerun may continue it)."""
        if self._lock is None:
            return
        files = [p for p in self._made if p.parent == self.path]
        untouched = {p.name for p in self.path.iterdir()} <= {p.name for p in files}
        if untouched:
            for path in files:
                path.unlink(missing_ok=True)
        self.release()
        if untouched:
            for folder in (p for p in self._made if p not in files):  # the run folder first, then its parents
                with contextlib.suppress(OSError):
                    folder.rmdir()
        self._made = []

    def release(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def keep_metrics_until(self, epoch: int, event: dict | None = None) -> None:
        """metrics.jsonl without the lines of steps after `epoch` (a killed run's, replayed now), plus `event`."""
        if not self.metrics.exists():
            lines = []
        else:
            lines = [line for line in self.metrics.read_text(encoding="utf-8").splitlines() if line.strip()]
        kept = [line for line in lines if json.loads(line).get("epoch", 0) <= epoch]
        if event is not None:
            kept.append(json.dumps(dict(event, dropped_lines=len(lines) - len(kept), time=time.time())))
        if kept or lines:
            write_atomically(self.metrics, "".join(line + "\n" for line in kept))

    def unaudited_epochs(self) -> list[int]:
        """Complete checkpoints without an audit: a run killed during the audit of an epoch redoes it on resume."""
        return [epoch for epoch in self.complete_epochs() if not self.audit_of(epoch).exists()]


def main_view(value):
    """`value` as the main process has it, on every process: for a decision about a run directory that every
    process must take alike (their clocks and their views of a shared folder may differ by a moment)."""
    return broadcast_object_list([value])[0]


def checkpoint_epsilon(checkpoint) -> dict | None:
    """The DP budget spent up to a checkpoint, from the privacy.json a DP run writes beside the weights:
    {accountant: epsilon, ..., "delta": delta, "unit": "chunk" or "user" (what epsilon protects)}; None for a
    non-private run."""
    path = Path(checkpoint) / "privacy.json"
    if not path.exists():
        return None
    spent = json.loads(path.read_text())
    settings = spent.get("privacy", {})
    return {**spent.get("epsilon", {}), "delta": settings.get("delta"), "unit": settings.get("unit", "chunk")}


def checkpoint_warm_start(checkpoint) -> dict | None:
    """What the public warm start of a checkpoint's run saw (ppmlm/training/warm_start.py), or None without one."""
    path = Path(checkpoint) / WARM_START_RECORD
    return json.loads(path.read_text()) if path.is_file() else None


def _shown(value):
    """As on a command line: null, true, false."""
    return json.dumps(value) if value is None or isinstance(value, bool) else value


def flatten_config(config: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in config.items():
        if isinstance(value, dict):
            flat.update(flatten_config(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
