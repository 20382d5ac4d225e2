"""ppmlm inside your own Hugging Face `Trainer` script: the recipe's blacklist and features, the masking collator as
the Trainer's `data_collator`, and the per-epoch audit as a `TrainerCallback`.

    cfg = compose_config(["recipe=ppmlm", "data.path=notes.jsonl", "output_dir=runs/notes-trainer"])
    args = TrainingArguments(output_dir="runs/notes-trainer/trainer", num_train_epochs=4, remove_unused_columns=False)
    run = prepare_trainer_run(cfg, tokenizer, args)
    trainer = Trainer(model=run.load_model(), args=args, train_dataset=run.features, data_collator=run.collator,
                      callbacks=[PrivacyAuditCallback(run)])
    trainer.train()

`prepare_trainer_run` does what ppmlm's own loop does before its first step: it locks the run directory, reads the
corpus, splits its users, builds (or reuses) the members' blacklist and tokenizes their chunks with the `protected`
flag, and records config.yaml (its `train` section is what the TrainingArguments say: the model card states it),
split.json and blacklist.json. The callback saves each epoch's weights and tokenizer to checkpoints/epoch-N, audits
them into audit/ exactly as the loop's audit does, optionally stops the training when the sharing policy fails an
epoch, and ends with the policy's verdict. The run directory is then one that `ppmlm push` and `ppmlm audit` take
like any other. Nothing of the callback shifts the Trainer's random streams: the reference model it may train and
the audits run on saved and restored generators.
"""
from __future__ import annotations

import contextlib
import functools
import math
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from accelerate import PartialState
from omegaconf import OmegaConf
from transformers import TrainerCallback

from ppmlm.audit.policy import FAIL
from ppmlm.config import RunConfig
from ppmlm.errors import ConfigError
from ppmlm.identifiers.blacklist import corpus_fingerprint
from ppmlm.masking.collator import PrivacyMaskingCollator
from ppmlm.masking.variants import get_variant
from ppmlm.models import default_model_path
from ppmlm.pipeline import AuditAfterEachEpoch
from ppmlm.rundir import RunDirectory, main_view
from ppmlm.training.data import RunData, prepare
from ppmlm.training.loop import load_model, record_run


@dataclass
class TrainerRun:
    """A run directory prepared for a Hugging Face Trainer: its checked configuration (`train` from the Trainer's
    arguments), the directory (locked until the training ends), the data (corpus, split, blacklist, features) and the
    tokenizer saved with every checkpoint."""

    config: RunConfig
    directory: RunDirectory
    data: RunData
    tokenizer: object

    @property
    def path(self) -> Path:
        return self.directory.path

    @property
    def features(self):
        """The members' chunks, every column kept: the collator needs `word_ids` and `protected`."""
        return self.data.features

    @functools.cached_property
    def collator(self) -> PrivacyMaskingCollator:
        """Whole-word masking at the recipe's rate that never makes a protected token a label."""
        return PrivacyMaskingCollator(self.tokenizer, mlm_probability=self.config.masking.mlm_probability)

    def load_model(self):
        """The masked LM the run's `model` keys name (a local checkpoint, the offline warm start, or a config): the
        model card and the audit's `base` and `population` references are built from those keys."""
        return load_model(self.config.model, self.tokenizer)


def prepare_trainer_run(cfg, tokenizer, args) -> TrainerRun:
    """The run of configuration `cfg` (composed by `compose_config`, or a RunConfig) to be trained by a Trainer with
    TrainingArguments `args`. What the Trainer cannot do as the recipe says is refused first, in one line naming the
    key or argument (DP-SGD, packing, a budget of steps instead of whole epochs, dropped columns, sharded models);
    then the directory is locked and the data prepared as for ppmlm's own loop."""
    check_arguments(args)
    args.device  # the Trainer's process state set up first: PartialState() below is that one
    resolved = cfg.resolved if isinstance(cfg, RunConfig) else OmegaConf.to_container(cfg, resolve=True)
    cfg = RunConfig.from_config(resolved)
    check_recipe(cfg)
    state = PartialState()
    run = RunDirectory(cfg.output_dir)
    run.check_target()
    done = run.complete_epochs()
    if done and cfg.resume is False:
        raise ConfigError(f"resume=false but {run.path} already holds checkpoints: choose another output_dir")
    run.claim(state)
    with run.withdrawn_on_failure():
        data = prepare(cfg, tokenizer, get_variant(cfg.masking.variant), state)
        fingerprint = corpus_fingerprint(data.corpus)
        cfg = RunConfig.from_config({**resolved, "train": {**resolved["train"], **trainer_settings(args, data, state)}})
        if done:  # a Trainer resumed from its own checkpoint continues this run: same settings, same corpus
            run.check_same_settings(cfg.resolved, cfg.allow_resume_changes)
            run.check_same_corpus(fingerprint, cfg.allow_resume_changes)
    if state.is_main_process:
        record_run(run, cfg, data, fingerprint)
    state.print(f"{cfg.masking.variant}: {len(set(data.features['user_id']))} training users, {len(data.features)} chunks "
                f"of at most {cfg.train.max_length} tokens for the Trainer; run directory {run.path}")
    return TrainerRun(cfg, run, data, tokenizer)


def check_arguments(args) -> None:
    """The TrainingArguments that ppmlm's run directory and collator need."""
    if args.remove_unused_columns:
        raise ConfigError("TrainingArguments(remove_unused_columns=True) drops the word_ids and protected columns that "
                          "the PrivacyMaskingCollator needs to mask whole words and spare protected tokens: set "
                          "remove_unused_columns=False")
    epochs = args.num_train_epochs
    if args.max_steps > 0 or epochs < 1 or epochs != int(epochs):
        raise ConfigError(f"TrainingArguments(num_train_epochs={epochs}, max_steps={args.max_steps}): ppmlm audits whole "
                          "epochs; give a whole number of epochs and leave max_steps at -1")
    if args.fsdp or args.deepspeed:
        raise ConfigError("TrainingArguments with FSDP or DeepSpeed: the callback saves each epoch with the model's "
                          "save_pretrained, which a sharded model does not support; train on one or several processes "
                          "with plain data parallelism")


def check_recipe(cfg: RunConfig) -> None:
    """The recipe keys a Trainer cannot honour, refused rather than recorded as if it had."""
    if cfg.task != "mlm" or cfg.data.train_users != "members":
        raise ConfigError(f"task={cfg.task}, data.train_users={cfg.data.train_users}: a Trainer run of ppmlm fine-tunes a "
                          "masked LM on the members (task=mlm, data.train_users=members)")
    if cfg.train.dp.enabled:
        raise ConfigError("train.dp.enabled=true: the Trainer clips no chunk's gradient and adds no noise; DP-SGD runs in "
                          "ppmlm's own loop (python train.py ... train.dp.enabled=true)")
    if cfg.train.packing:
        raise ConfigError("train.packing=true: the PrivacyMaskingCollator pads chunks; packing runs in ppmlm's own loop")


def trainer_settings(args, data: RunData, state: PartialState) -> dict:
    """The run's `train` keys as the Trainer will train: epochs, batch per process, learning rate (one for every
    parameter: `head_lr` null), weight decay, warm-up share, gradient clipping and accumulation, precision, fused
    AdamW, torch.compile. The model card states them, and the audit's population reference trains with them."""
    steps = args.num_train_epochs * math.ceil(
        math.ceil(len(data.features) / (args.per_device_train_batch_size * state.num_processes))
        / args.gradient_accumulation_steps)
    warmup = args.warmup_steps if args.warmup_steps >= 1 else 0
    ratio = warmup / steps if warmup else (args.warmup_steps or getattr(args, "warmup_ratio", 0) or 0)
    if ratio >= 1:
        raise ConfigError(f"TrainingArguments(warmup_steps={args.warmup_steps}): the run has {steps} steps in all; warm up "
                          "over fewer")
    optimizer = str(getattr(args.optim, "value", args.optim))
    return {"epochs": int(args.num_train_epochs), "batch_size": args.per_device_train_batch_size,
            "lr": args.learning_rate, "head_lr": None, "weight_decay": args.weight_decay, "warmup_ratio": ratio,
            "max_grad_norm": args.max_grad_norm or None, "gradient_accumulation_steps": args.gradient_accumulation_steps,
            "mixed_precision": "bf16" if args.bf16 else "fp16" if args.fp16 else "no",
            "fused_optimizer": optimizer.endswith("fused"), "compile": bool(args.torch_compile)}


@contextlib.contextmanager
def random_state_kept():
    """Python's, numpy's and torch's generators as they were before: what runs inside leaves the Trainer's masking,
    dropout and sampling as they would have been without it."""
    python, numpy_state = random.getstate(), np.random.get_state()
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=devices):
        try:
            yield
        finally:
            random.setstate(python)
            np.random.set_state(numpy_state)


class PrivacyAuditCallback(TrainerCallback):
    """The per-epoch audit of ppmlm in a Hugging Face Trainer, on the run `prepare_trainer_run` made.

    Before the first step every process makes sure the audit's reference model exists (training the population
    reference with ppmlm's loop when it is not cached) and the main process audits any saved epoch without its audit.
    After each epoch the main process saves the weights and tokenizer to checkpoints/epoch-N (`complete` last) and
    audits them (after the Trainer's own checkpoint of the epoch, where it saves one each epoch); with
    `stop_on_failure` a check of the sharing policy that fails (its whole interval beyond the threshold: a measured
    leak) stops the training there. The training ends with the policy's verdict on the last
    epoch, and the run directory's lock is released."""

    def __init__(self, run: TrainerRun, stop_on_failure: bool = False):
        self.run, self.stop_on_failure = run, stop_on_failure
        self.audits = AuditAfterEachEpoch(run.config)
        self.processes = PartialState()
        self.unaudited: int | None = None  # the epoch saved last, until its audit

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        check_arguments(args)
        changed = {key: value for key, value in trainer_settings(args, self.run.data, self.processes).items()
                   if self.run.config.resolved["train"][key] != value}
        if changed:
            raise ConfigError("the Trainer does not train with the arguments its run was prepared with ("
                              + "; ".join(f"train.{key}={self.run.config.resolved['train'][key]!r} in config.yaml, {value!r} "
                                          "now" for key, value in changed.items())
                              + "): hand the same TrainingArguments to prepare_trainer_run and to the Trainer")
        self.check_model(model)
        directory, start = self.run.directory, round(state.epoch or 0)
        later = [epoch for epoch in directory.complete_epochs() if epoch > start]
        if later:
            raise ConfigError(f"output_dir={directory.path} holds the checkpoint of epoch {later[-1]} and this Trainer starts "
                              f"after epoch {start}: it would overwrite them; resume the Trainer from its checkpoint "
                              "(trainer.train(resume_from_checkpoint=True)) or choose another output_dir")
        with random_state_kept():
            self.audits.on_train_begin(directory, self.run.data, self.processes)

    def on_epoch_end(self, args, state, control, model=None, **kwargs):
        """Saves the epoch's weights and tokenizer. Under save_strategy "epoch" the audit waits for the Trainer's own
        checkpoint of the epoch (`on_save`): a run killed during the audit then resumes after the epoch and audits it
        first, instead of training it again over a saved checkpoint."""
        epoch = round(state.epoch)
        if self.processes.is_main_process:
            checkpoint = self.run.directory.checkpoint(epoch)
            model.save_pretrained(checkpoint)
            self.run.tokenizer.save_pretrained(checkpoint)
            self.run.directory.mark_complete(epoch)
        self.unaudited = epoch
        return control if args.save_strategy == "epoch" else self.audit_epoch(control)

    def on_save(self, args, state, control, **kwargs):
        return self.audit_epoch(control)

    def audit_epoch(self, control):
        """The audit of the epoch saved last, once; with `stop_on_failure` a failing audit stops the training."""
        epoch, self.unaudited = self.unaudited, None
        if epoch is None:
            return control
        failed = None
        if self.processes.is_main_process:
            with random_state_kept():
                figures = self.audits.audit(self.run.data, self.run.directory, self.run.directory.checkpoint(epoch), epoch)
            failed = [check.describe() for check in self.run.config.share.policy.check(figures) if check.status == FAIL]
        failed = main_view(failed)  # every process stops alike, or none does
        if failed and self.stop_on_failure:
            self.processes.print(f"stopping after epoch {epoch}: the sharing policy fails it ({'; '.join(failed)}); "
                                 "more epochs of the same training would not make it pass")
            control.should_training_stop = True
        return control

    def on_train_end(self, args, state, control, **kwargs):
        self.audit_epoch(control)  # an epoch the Trainer did not save
        self.audits.say_verdict()
        self.run.directory.release()

    def check_model(self, model) -> None:
        """The Trainer's model must be the one the run's `model` keys name: the card and the references follow them."""
        settings = self.run.config.model
        if model is None or settings.config is not None:
            return
        named = Path(str(settings.name_or_path or default_model_path())).resolve()
        loaded = getattr(model.config, "_name_or_path", "")
        if not loaded or Path(loaded).resolve() != named:
            raise ConfigError(f"the Trainer's model was loaded from {loaded or 'no checkpoint'}, but the run's "
                              f"model.name_or_path is {named}: load it with run.load_model(), or set model.name_or_path "
                              "(the model card and the audit's references are built from it)")
