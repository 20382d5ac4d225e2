"""One accelerate training loop for every masking variant, on CPU, one GPU or several processes.

Read top to bottom: configuration (a RunConfig, ppmlm/config.py, checked by the caller) -> data -> model ->
trainer -> epochs (steps, metrics, checkpoint, callbacks). Work around the epochs (the per-epoch audit) comes
in as callbacks wired by the caller (ppmlm.pipeline): the loop knows when to call them, not what they do.
The trainer is `PlainTrainer` below, or `dp.PrivateTrainer` under `train.dp.enabled` (DP-SGD with Opacus); both yield one item per
optimizer step. Each epoch reseeds the masking and dropout from (seed, epoch, rank), and the DP trainer its
sampling and noise, so a run resumed from a checkpoint replays the same epochs as an uninterrupted one.
"""
from __future__ import annotations

import contextlib
import json
import logging
import math
import re
import shutil
import time
import warnings
from pathlib import Path
from typing import Iterator, Protocol, Sequence

import torch
from accelerate import Accelerator, DataLoaderConfiguration
from accelerate.utils import set_seed
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import AutoConfig, AutoModelForMaskedLM, AutoTokenizer, get_linear_schedule_with_warmup
from transformers.utils import logging as transformers_logging

from ppmlm.errors import PPMLMError
from ppmlm.features import FEATURE_COLUMNS
from ppmlm.files import write_atomically
from ppmlm.identifiers.blacklist import corpus_fingerprint
from ppmlm.masking.collator import PrivacyMaskingCollator
from ppmlm.masking.variants import get_variant
from ppmlm.models import default_model_path
from ppmlm.rundir import WARM_START_RECORD, RunDirectory, flatten_config
from ppmlm.training.data import prepare
from ppmlm.training.distributed import end_processes
from ppmlm.training.dp.trainer import PrivateTrainer
from ppmlm.training.objective import MaskedLMLoss
from ppmlm.training.optimizer import adamw
from ppmlm.training.packing import PackedRows, PackingCollator, position_offset
from ppmlm.training.warm_start import public_warm_start


class TrainingCallback(Protocol):
    """Work the caller hangs on the loop. Both hooks run on every process; they decide who does what."""

    def on_train_begin(self, run: RunDirectory, data, accelerator) -> None:
        """Before the first step, after the run directory is claimed and the data prepared (also on resume)."""

    def on_epoch_end(self, run: RunDirectory, data, epoch: int, checkpoint: Path, accelerator) -> None:
        """After epoch `epoch` (1-based) is saved to `checkpoint`."""


def train(cfg, callbacks: Sequence[TrainingCallback] = ()) -> Path:
    """Train the recipe of run configuration `cfg` (a ppmlm.config.RunConfig, which sits above this layer:
    ppmlm.train builds it); returns the run directory."""
    run = RunDirectory(cfg.output_dir)
    run.check_target()
    start_epoch = run.resume_point(cfg.resume)  # read only: a rerun that may not continue leaves the folder untouched
    changes = run.check_same_settings(cfg.resolved, cfg.allow_resume_changes) if start_epoch else []
    accelerator = Accelerator(
        cpu=not torch.cuda.is_available(),
        mixed_precision=cfg.train.mixed_precision,  # null: accelerate launch's --mixed_precision, else no
        gradient_accumulation_steps=cfg.train.gradient_accumulation_steps,
        log_with=cfg.train.tracker,
        project_dir=str(run.path),
        dataloader_config=DataLoaderConfiguration(use_seedable_sampler=True),
    )
    run.claim(accelerator)  # first: a second training on this folder fails at once, and nothing is written unlocked
    with run.withdrawn_on_failure():
        set_seed(cfg.seed)
        if accelerator.mixed_precision == "fp16" and accelerator.device.type == "cpu":
            accelerator.print("mixed_precision=fp16 autocasts on GPUs only: this CPU run trains in float32 "
                              "(bf16 autocasts on CPUs)")

        tokenizer = AutoTokenizer.from_pretrained(str(cfg.model.name_or_path or default_model_path()))
        variant = get_variant(cfg.masking.variant)
        data = prepare(cfg, tokenizer, variant, accelerator)
        fingerprint = corpus_fingerprint(data.corpus)
        if start_epoch and run.check_same_corpus(fingerprint, cfg.allow_resume_changes):
            changes.append("the corpus")
    if accelerator.is_main_process:
        record_run(run, cfg, data, fingerprint)
        run.keep_metrics_until(start_epoch, {"event": "resume", "epoch": start_epoch, "changes": changes}
                               if start_epoch else None)
    accelerator.print(
        f"{variant.name}: {len(set(data.features['user_id']))} training users ({cfg.data.train_users}), "
        f"{len(data.features)} chunks "
        f"of at most {cfg.train.max_length} tokens; run directory {run.path}"
    )

    for callback in callbacks:
        callback.on_train_begin(run, data, accelerator)
    model, warm_start = public_warm_start(cfg, load_model(cfg.model, tokenizer), tokenizer, data.corpus, accelerator)
    collator = PrivacyMaskingCollator(tokenizer, mlm_probability=cfg.masking.mlm_probability, generator=torch.Generator())
    if cfg.train.dp.enabled:
        trainer = PrivateTrainer(cfg.train, cfg.seed, model, data.features, collator, accelerator)
    else:
        trainer = PlainTrainer(cfg.train, cfg.seed, model, data.features, collator, accelerator)
    total_steps = cfg.train.epochs * trainer.steps_per_epoch
    scheduler = get_linear_schedule_with_warmup(trainer.optimizer, math.ceil(cfg.train.warmup_ratio * total_steps), total_steps)
    accelerator.register_for_checkpointing(scheduler, *trainer.checkpointed)
    if cfg.train.tracker:
        flat = flatten_config(cfg.resolved)
        accelerator.init_trackers("ppmlm", config={key: value if isinstance(value, (int, float, str, bool)) else str(value)
                                                   for key, value in flat.items()})

    if start_epoch:
        accelerator.load_state(str(run.checkpoint(start_epoch) / "state"))
        accelerator.print(f"resuming after epoch {start_epoch} from {run.checkpoint(start_epoch)}")
    metrics = MetricsLog(run.metrics, accelerator)

    steps = trainer.steps_per_epoch
    for epoch in range(start_epoch, cfg.train.epochs):
        set_seed(cfg.seed + 1000 * epoch, device_specific=True)  # dropout
        collator.generator.manual_seed(cfg.seed + 1000 * epoch + accelerator.process_index)  # masking
        trainer.set_epoch(epoch)
        trainer.objective.train()
        epoch_start = time.perf_counter()
        bar = tqdm(total=steps, desc=f"epoch {epoch + 1}/{cfg.train.epochs}", disable=not accelerator.is_local_main_process)
        window = StepWindow()
        for step, stats in enumerate(trainer.steps()):
            scheduler.step()
            window.add(*stats)
            bar.update()
            if (step + 1) % cfg.train.log_every == 0 or step + 1 == steps:
                line = window.flush(accelerator, epoch=epoch + 1, step=epoch * steps + step + 1,
                                    lr=scheduler.get_last_lr()[0])
                metrics.write(line)
                if line["loss"] is not None:
                    bar.set_postfix(loss=f"{line['loss']:.3f}")
        bar.close()
        train_seconds = round(time.perf_counter() - epoch_start, 3)  # steps only: no checkpoint, no audit
        report = trainer.epoch_report()
        checkpoint = save_checkpoint(accelerator, trainer, tokenizer, run, epoch + 1, report, warm_start)
        metrics.write({"event": "epoch_end", "epoch": epoch + 1, "checkpoint": str(checkpoint.relative_to(run.path)),
                       "steps": steps, "train_seconds": train_seconds, "processes": accelerator.num_processes,
                       "precision": trainer.precision,
                       "weight_checksums": weight_checksums(accelerator, trainer.objective), **report})
        if "epsilon" in report:
            privacy = report["privacy"]
            accelerator.print(f"epoch {epoch + 1}: epsilon per {privacy['unit']} at delta={privacy['delta']}: "
                              + ", ".join(f"{k} {v:.3f}" for k, v in report["epsilon"].items()))
        for callback in callbacks:
            callback.on_epoch_end(run, data, epoch + 1, checkpoint, accelerator)
        accelerator.wait_for_everyone()
    trainer.close()
    del scheduler  # it holds the optimizer
    end_processes(accelerator)  # DDP released, then the process group destroyed (ppmlm.training.distributed)
    run.release()
    accelerator.print(f"done: checkpoints in {run.checkpoints}")
    return run.path


def record_run(run: RunDirectory, cfg, data, fingerprint: str) -> None:
    """What a run directory records of its training before the first step (main process): the corpus fingerprint,
    config.yaml, split.json, and the blacklist's parameters and counts, never its terms (those stay in the sensitive
    cache). `ppmlm push`, `ppmlm audit` and a resume read them."""
    run.record_corpus(fingerprint)
    write_atomically(run.config, cfg.to_yaml())
    data.split.save(run.split)
    write_atomically(run.blacklist_summary, json.dumps(
        {key: data.blacklist.stats.get(key) for key in ("parameters", "counts")}, indent=1))


def load_model(model_cfg, tokenizer):
    """A masked-LM from a local checkpoint, the offline warm start, or a config (tiny test models); `model_cfg`
    is the run's ModelConfig."""
    if model_cfg.config is not None:
        config = AutoConfig.for_model(**dict(model_cfg.config), vocab_size=len(tokenizer))
        return AutoModelForMaskedLM.from_config(config)
    path = str(model_cfg.name_or_path or default_model_path())
    if not Path(path).exists():
        raise PPMLMError(f"model.name_or_path={path}: no such local checkpoint (models are never downloaded)")
    with load_report_quiet():
        model, loading = AutoModelForMaskedLM.from_pretrained(path, output_loading_info=True)
    model.ppmlm_fresh_parameters = frozenset(loading["missing_keys"])
    untrained = sorted(key for key in model.ppmlm_fresh_parameters if key.startswith(f"{model.base_model_prefix}."))
    if untrained:  # the head is expected to be new; the encoder is not
        warnings.warn(f"model.name_or_path={path}: {len(untrained)} encoder weights are not in the checkpoint and start "
                      f"untrained: {', '.join(untrained[:4])}{', ...' if len(untrained) > 4 else ''}")
    return model


@contextlib.contextmanager
def load_report_quiet() -> Iterator[None]:
    """Without transformers' load report. Loaded into a new head, an encoder is reported with the head's weights
    MISSING, the pooler's UNEXPECTED and, for the MLM head's tied bias, as "corrupted": that is how ppmlm starts from
    an encoder (and a tagger from any checkpoint), so the caller says what is not expected instead."""
    verbosity = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_error()
    try:
        yield
    finally:
        transformers_logging.set_verbosity(verbosity)


@contextlib.contextmanager
def tied_weights_saved_quietly(model) -> Iterator[None]:
    """accelerate's `save_state` keeps one of the tensors that share storage and warns of the others on every epoch
    ("Removed shared tensor ... check ... while reloading"). For the weights the model's class ties
    (`_tied_weights_keys`: the MLM head's decoder to the word embeddings, its bias) that is expected and loading ties
    them again (tests/test_dp_user.py resumes to the same weights), so that warning alone is dropped; a shared
    tensor of any other name is still reported."""
    tied = tuple(getattr(model, "_tied_weights_keys", None) or ())

    def unexpected(record: logging.LogRecord) -> bool:
        message = record.getMessage()
        names = re.findall(r"'([^']+)'", message) if "Removed shared tensor" in message else []
        return not (tied and names and all(name.endswith(tied) for name in names))

    notices = logging.getLogger("accelerate.utils.other")
    notices.addFilter(unexpected)
    try:
        yield
    finally:
        notices.removeFilter(unexpected)


def save_checkpoint(accelerator, trainer, tokenizer, run: RunDirectory, epoch: int, privacy: dict | None = None,
                    warm_start: dict | None = None, keep_states: int = 1) -> Path:
    """Hugging Face weights and tokenizer for every epoch; optimizer, scheduler and RNG state for the last.

    A DP run also writes `privacy.json` (epsilon and its settings) beside the weights, and a run started from a
    public warm start `warm_start.json` (what it saw), so that anyone auditing or sharing that checkpoint alone has
    them.
    """
    directory = run.checkpoint(epoch)
    accelerator.wait_for_everyone()
    with tied_weights_saved_quietly(accelerator.unwrap_model(trainer.objective).model):
        accelerator.save_state(str(directory / "state"))
    if accelerator.is_main_process:
        trainer.save_pretrained(directory)
        tokenizer.save_pretrained(directory)
        if privacy:
            (directory / "privacy.json").write_text(json.dumps(privacy, indent=1))
        if warm_start:
            (directory / WARM_START_RECORD).write_text(json.dumps(warm_start, indent=1))
        run.mark_complete(epoch)
        states = sorted((p for p in run.checkpoints.glob("epoch-*/state")), key=lambda p: int(p.parent.name.split("-")[1]))
        for old in states[:-keep_states]:
            shutil.rmtree(old, ignore_errors=True)
    accelerator.wait_for_everyone()
    return directory


def weight_checksums(accelerator, objective) -> list[float]:
    """One checksum of the weights per process: all equal when data parallelism kept the ranks in step."""
    total = sum(p.detach().double().sum() + p.detach().double().abs().sum() for p in objective.parameters())
    return [round(x, 6) for x in accelerator.gather(total.reshape(1).to(accelerator.device)).tolist()]


class StepWindow:
    """Loss, masked tokens and throughput over the steps since the last metrics line.

    `loss` is a sum over `weight` sequences: a batch mean has weight 1; DP steps pass the sum over their
    Poisson batch and its size, which may be 0 (a window of empty batches has no loss).
    The sums stay where the values are (on the GPU, in float64: what Python floats summed before), so that a
    step never waits for the GPU to finish it; the flush is the window's one synchronisation.
    """

    def __init__(self):
        self.sums, self.start = torch.zeros(4, dtype=torch.float64), time.perf_counter()

    def add(self, loss, masked, tokens, weight: int = 1) -> None:
        values = [torch.as_tensor(value).detach().double().reshape(()) for value in (loss, weight, masked, tokens)]
        self.sums = self.sums.to(values[0].device) + torch.stack([v.to(values[0].device) for v in values])

    def flush(self, accelerator, **fields) -> dict:
        local = self.sums.float().to(accelerator.device)  # float32 across processes, as always
        loss, weight, masked, tokens = accelerator.reduce(local, reduction="sum").tolist()
        elapsed = time.perf_counter() - self.start
        line = dict(fields, loss=loss / weight if weight else None, masked_tokens=int(masked),
                    tokens_per_s=tokens / max(elapsed, 1e-9))
        self.__init__()
        return line


class PlainTrainer:
    """Non-private steps: accelerate's data parallelism, gradient accumulation and mixed precision, optional
    clipping of the batch gradient, and the speed options of docs/training.md (fused AdamW, torch.compile)."""

    def __init__(self, train, seed, model, features, collator, accelerator):
        """`train`: the run's TrainConfig; `accelerator` carries its mixed precision and gradient accumulation."""
        self.train, self.accelerator = train, accelerator
        chunks = features.select_columns(list(FEATURE_COLUMNS))
        objective = MaskedLMLoss(model)
        if train.packing:  # batches of `batch_size` rows, each of as many whole chunks as fit in max_length tokens
            position_offset(model)  # refuses a model that cannot take packed rows, before any step
            chunks, collator = PackedRows(chunks, train.max_length, seed), PackingCollator(collator)
            accelerator.print(f"packing: {len(chunks.lengths)} chunks in {len(chunks)} rows of {train.max_length} tokens, "
                              f"{chunks.fill:.1%} of their positions text")
        loader = DataLoader(chunks, batch_size=train.batch_size, shuffle=True, collate_fn=collator,
                            num_workers=train.num_workers)
        if train.compile:  # in place: the checkpoint's parameter names stay those of the model
            model.base_model.compile()
        optimizer = adamw(objective, train, accelerator.device)
        self.objective, self.optimizer, self.loader = accelerator.prepare(objective, optimizer, loader)
        # accelerate steps the optimizer after every `gradient_accumulation_steps` batches and after an epoch's last
        self.steps_per_epoch = math.ceil(len(self.loader) / train.gradient_accumulation_steps)
        # what autocast runs: train.mixed_precision, else the launch flag's; fp16 autocasts on GPUs only
        self.precision = accelerator.mixed_precision if accelerator.native_amp else "no"
        self.checkpointed = ()  # accelerate saves what it prepared

    def set_epoch(self, epoch: int) -> None:
        self.loader.set_epoch(epoch)
        if self.train.packing:  # accelerate reaches a dataset's set_epoch on one process only
            self.loader.dataset.set_epoch(epoch)

    def steps(self):
        """One item per optimizer step: the summed batch-mean losses, masked and attended tokens, and the number
        of batches behind them (1 without accumulation)."""
        loss_sum, masked, tokens, batches = 0, 0, 0, 0
        for batch in self.loader:
            with self.accelerator.accumulate(self.objective):  # divides the loss by the batches per step
                loss = self.objective(**batch).mean()  # over the batch's chunks, packed or not
                self.accelerator.backward(loss)
                if self.train.max_grad_norm and self.accelerator.sync_gradients:
                    self.accelerator.clip_grad_norm_(self.objective.parameters(), self.train.max_grad_norm)
                self.optimizer.step()  # a no-op until the step's last batch
                self.optimizer.zero_grad()
            loss_sum += loss.detach()
            masked += (batch["labels"] != -100).sum()
            tokens += batch["attention_mask"].sum()
            batches += 1
            if self.accelerator.sync_gradients:
                yield loss_sum, masked, tokens, batches
                loss_sum, masked, tokens, batches = 0, 0, 0, 0

    def save_pretrained(self, directory) -> None:
        self.accelerator.unwrap_model(self.objective).model.save_pretrained(directory)

    def epoch_report(self) -> dict:
        return {}

    def close(self) -> None:
        """Drops the DDP-wrapped objective, its optimizer and loader: before the process group ends."""
        del self.objective, self.optimizer, self.loader


class MetricsLog:
    """metrics.jsonl, written by the main process only; also sent to accelerate's trackers."""

    def __init__(self, path: Path, accelerator):
        self.path, self.accelerator = path, accelerator

    def write(self, line: dict) -> None:
        if self.accelerator.is_main_process:
            with self.path.open("a") as handle:
                handle.write(json.dumps(dict(line, time=time.time())) + "\n")
        numbers = {k: v for k, v in line.items() if isinstance(v, (int, float)) and k not in ("epoch", "step")}
        if "step" in line and numbers:
            self.accelerator.log(numbers, step=line["step"])
