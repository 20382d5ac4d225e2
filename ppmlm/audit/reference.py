"""The reference model of the likelihood-ratio attack (Mireshghallah et al.).

The attack compares how well the audited model and a reference model explain a sample; the reference
must know the domain without having seen the audited users. By default it is trained with the run's own
recipe on the population users (held out from both training and the attack) less those lent to the
attack's non-member side (`audit.lend_population`), once, and cached under a key of everything that
shapes it: the run's configuration (minus where it writes and how it logs), the corpus and the users
lent. `base` uses the checkpoint the run started from; a path uses that checkpoint. Two runs that need the same
reference at once (a sweep started in parallel) train it once: the second waits for the first.

The audit does not train: whoever wires it to a training run (ppmlm.pipeline) passes the trainer in.
"""
from __future__ import annotations

import copy
import hashlib
import json
import time
from pathlib import Path
from typing import Callable

from omegaconf import OmegaConf

from ppmlm.audit.sampling import lent_by_run
from ppmlm.corpus.loading import load_run_corpus
from ppmlm.corpus.split import split_users
from ppmlm.errors import PPMLMError, RunInUseError
from ppmlm.identifiers.blacklist import corpus_fingerprint
from ppmlm.models import default_model_path
from ppmlm.rundir import RunDirectory, main_view

POPULATION, BASE, NONE = "population", "base", "none"
DEFAULT_CACHE_DIR = ".cache/ppmlm/references"
# Settings that change where a run writes or how it reports, never the model it trains.
NOT_IN_KEY = ("output_dir", "resume", "audit", "share")
NOT_IN_KEY_TRAIN = ("log_every", "tracker", "num_workers")
# The speed options (docs/training.md) at the values that train as before they existed: left out of the key, so
# that references cached before them are still found; any other value trains another model and is in the key.
TRAIN_AS_BEFORE = {"gradient_accumulation_steps": 1, "mixed_precision": None, "fused_optimizer": "auto", "compile": False,
                   "packing": False}
# How long a run waits for another process training the same reference (a reference on a large population can take
# hours), how often it looks, and how often it says it still waits when that training shows no new epoch.
WAIT_LIMIT_S = 24 * 3600
WAIT_POLL_S = 10
WAIT_NOTE_S = 600


def reference_config(cfg):
    """The run's configuration retargeted at the population users (less those lent to the audit), its
    output directory the cache entry."""
    shaping = OmegaConf.to_container(cfg, resolve=True)
    for key in NOT_IN_KEY:
        shaping.pop(key, None)
    for key in NOT_IN_KEY_TRAIN:
        shaping.get("train", {}).pop(key, None)
    for key, value in TRAIN_AS_BEFORE.items():
        if shaping.get("train", {}).get(key, value) == value:
            shaping.get("train", {}).pop(key, None)
    corpus = load_run_corpus(cfg.data, cfg.seed)
    fingerprint = corpus_fingerprint(corpus)
    split = split_users(corpus["user_id"], seed=cfg.seed, audit_fraction=cfg.data.audit_fraction,
                        population_fraction=cfg.data.population_fraction)
    lent = lent_by_run(cfg, split)
    if lent:  # the reference trains on the population less these (ppmlm.training.data): another model
        shaping["population_lent_to_audit"] = lent
    key = hashlib.blake2b((json.dumps(shaping, sort_keys=True) + fingerprint).encode(), digest_size=12).hexdigest()
    cache_dir = Path(OmegaConf.select(cfg, "audit.reference_cache_dir", default=None) or DEFAULT_CACHE_DIR)
    reference = copy.deepcopy(cfg)
    OmegaConf.update(reference, "data.train_users", POPULATION)
    OmegaConf.update(reference, "output_dir", str(cache_dir / key))
    OmegaConf.update(reference, "resume", "auto")  # a killed reference training resumes
    if OmegaConf.select(reference, "audit") is not None:
        OmegaConf.update(reference, "audit.enabled", False, force_add=True)  # the reference of a reference is never needed
    return reference


def reference_checkpoint(cfg, train: Callable | None = None, wait_limit_s: float = WAIT_LIMIT_S,
                         poll_s: float = WAIT_POLL_S) -> Path:
    """The final checkpoint of the reference model for run configuration `cfg`, trained on the population
    users with `train(reference_config)` when not cached yet; without a trainer a missing reference is an
    error (inside a training loop, where only the main process audits, a nested training run could not
    synchronize the processes: the pipeline trains it before the first epoch, on every process).

    When another process is training the same reference (its folder is locked), this one waits for it, up to
    `wait_limit_s`, and then uses its checkpoint; had that process died, this one resumes its training."""
    reference = reference_config(cfg)
    run = RunDirectory(reference.output_dir)
    final = run.checkpoint(reference.train.epochs)
    if reference.train.epochs not in run.complete_epochs():
        if train is None:
            raise PPMLMError(f"no reference model at {final}: train it first (ppmlm.pipeline.train_reference)")
        print(f"training the reference model on the population users into {reference.output_dir}", flush=True)
        waiting = None
        while True:
            try:
                train(reference)
                break
            except RunInUseError:
                waiting = waiting or OtherTraining(run, reference.train.epochs, wait_limit_s)
                waiting.note()
                time.sleep(poll_s)
            if main_view(reference.train.epochs in run.complete_epochs()):
                print(f"using the reference model {final}, trained by {run.owner()}", flush=True)
                break
    return final


class OtherTraining:
    """Another process training the reference this run needs: this one says whom it waits for and how far that
    training is, and gives up after `limit_s` (every process alike, by the main process's clock)."""

    def __init__(self, run: RunDirectory, epochs: int, limit_s: float):
        self.run, self.epochs, self.limit_s = run, epochs, limit_s
        self.start = time.monotonic()
        self.noted: tuple[int, float] | None = None  # (epochs done, when) at the last note

    def note(self) -> None:
        now = time.monotonic()
        waited, done = main_view((now - self.start, len(self.run.complete_epochs())))
        owner = self.run.owner()
        if waited > self.limit_s:
            raise PPMLMError(f"waited {waited / 60:.0f} min for the reference model that another training ({owner}) "
                             f"trains into {self.run.path} ({done} of {self.epochs} epochs done): end that training "
                             f"and run again to resume it, or set audit.reference=none, base or a checkpoint")
        if self.noted is None or done != self.noted[0] or now - self.noted[1] >= WAIT_NOTE_S:
            print(f"waiting for another training ({owner}), which trains this reference model into {self.run.path}: "
                  f"{done} of {self.epochs} epochs done after {waited / 60:.0f} min of waiting (at most "
                  f"{self.limit_s / 3600:g} h)", flush=True)
            self.noted = (done, now)


def starting_checkpoint(cfg) -> Path:
    """The checkpoint a run was fine-tuned from (`base`)."""
    if cfg.model.get("config") is not None:
        raise PPMLMError("this run built its model from model.config: there is no starting checkpoint to use as "
                         "reference; give a checkpoint path or 'population'")
    return Path(cfg.model.name_or_path or default_model_path())


def resolve_reference(spec: str | None, cfg=None, train: Callable | None = None) -> Path | None:
    """The checkpoint named by `spec`: population | base | none | a path (None: none); `train` trains a
    population reference that is not cached yet."""
    if spec is None or spec == NONE:
        return None
    if spec in (POPULATION, BASE):
        if cfg is None:
            raise PPMLMError(f"reference '{spec}' needs the run's configuration (config.yaml beside its checkpoints)")
        return reference_checkpoint(cfg, train) if spec == POPULATION else starting_checkpoint(cfg)
    path = Path(spec)
    if not (path / "config.json").exists():
        raise PPMLMError(f"reference {spec}: not a saved model directory (no config.json)")
    return path
