"""Auditing a saved checkpoint: the one path used after every training epoch and by `ppmlm audit`.

Both load the model from disk rather than auditing the live training module, so the figures of an epoch
are exactly what a later `ppmlm audit` of that checkpoint reproduces, and no training wrapper (DDP,
Opacus) or train-mode state is involved.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch
from omegaconf import OmegaConf
from transformers import AutoModelForMaskedLM, AutoTokenizer

from ppmlm.audit.config import AuditConfig
from ppmlm.audit.console import verdict_lines
from ppmlm.audit.outputs import read_epochs
from ppmlm.audit.policy import SharingPolicy
from ppmlm.audit.runner import AuditInputs, prepare_audit, run_audit
from ppmlm.audit.warm_start import warm_start_seen
from ppmlm.errors import PPMLMError
from ppmlm.models import weights_digests
from ppmlm.rundir import OPERATIONAL, RunDirectory, checkpoint_epsilon, flatten_config


def load_masked_lm(path, device: str | torch.device):
    """A masked LM from a local directory, in eval mode; loading never draws from the global RNG."""
    with torch.random.fork_rng(devices=[]):
        model = AutoModelForMaskedLM.from_pretrained(str(path))
    return model.to(device).eval()


def dp_settings(checkpoint) -> dict | None:
    """The DP-SGD settings behind a DP checkpoint's ε (noise multiplier, clipping norm, sampling rate, steps, chunks
    per user, group bound), from the privacy.json training wrote beside its weights; None for a non-private one. The
    audit records and signs them with ε: privacy.json itself is signed by nothing, and the model card states only
    what the audit signed."""
    path = Path(checkpoint) / "privacy.json"
    return json.loads(path.read_text()).get("privacy") if path.is_file() else None


def settings_digest(config: dict) -> str:
    """sha256 of a run's training settings: its resolved config.yaml less the keys a resumed run may change (where it
    writes, logs and caches, the sharing policy). The audit records it with the digests of what it measured, so that
    `ppmlm push` can tell that the recipe, blacklist and optimization the model card states are those of the run whose
    weights were audited: config.yaml itself is signed by nothing."""
    shaping = {key: value for key, value in flatten_config(config).items() if not key.startswith(OPERATIONAL)}
    return hashlib.sha256(json.dumps(shaping, sort_keys=True, default=str).encode()).hexdigest()


def run_settings_digest(checkpoint) -> str | None:
    """`settings_digest` of the run a checkpoint belongs to (None for a checkpoint outside a run)."""
    run = RunDirectory.of_checkpoint(checkpoint)
    return settings_digest(OmegaConf.to_container(OmegaConf.load(run.config))) if run is not None else None


def audit_checkpoint(checkpoint, corpus, split, blacklist, out_dir, epoch: int, config: AuditConfig = AuditConfig(),
                     reference=None, epsilon: dict | None = None, device: str | None = None,
                     policy: SharingPolicy | None = None, canaries: list | None = None,
                     inputs: AuditInputs | None = None, final: bool = True) -> dict:
    """`run_audit` on the model and tokenizer saved in `checkpoint`, recording the sha256 of its weights files and of
    its run's training settings, the DP-SGD settings of its privacy.json and what its public warm start saw (its
    warm_start.json: sources and counts, signed with the figures for the model card); `reference` is a checkpoint path or
    None, `policy` the sharing policy the report's verdict applies, `canaries` those planted in the corpus (their
    exposure is measured), `inputs` the audit's prepared inputs (None: prepared here), `final` whether it is the last audit
    of a run or a standalone one (`audit.privacy_probe: final` probes every identifier occurrence then)."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    tokenizer = AutoTokenizer.from_pretrained(str(checkpoint))
    weights = weights_digests(checkpoint)  # before loading: the digests are of what the model is loaded from
    model = load_masked_lm(checkpoint, device)
    reference_model = load_masked_lm(reference, device) if reference is not None else None
    if reference_model is not None and reference_model.config.vocab_size != model.config.vocab_size:
        raise PPMLMError(f"reference {reference} has a vocabulary of {reference_model.config.vocab_size} tokens, "
                         f"the audited model {model.config.vocab_size}: they must share the tokenizer")
    return run_audit(model, tokenizer, corpus, split, blacklist, out_dir, epoch, config, reference_model, epsilon, weights,
                     policy, canaries, inputs, dp_settings=dp_settings(checkpoint), settings=run_settings_digest(checkpoint),
                     warm_start=warm_start_seen(checkpoint), final=final)


class TrainingAudits:
    """The audits of a training run's epochs (main process only), with the run's audit settings `config`, outputs in
    `out_dir` (the run's audit/). `reference` is the resolved reference checkpoint (or None), trained before
    training starts, on every process (`reference_checkpoint(cfg, train)`). The inputs every epoch shares
    (`AuditInputs`) are prepared by the first audit and kept for the others. `final_epoch` is the run's last epoch, whose
    audit probes every identifier occurrence by default (None: every audit is taken as final)."""

    def __init__(self, config: AuditConfig, run_data, out_dir, reference=None, policy: SharingPolicy | None = None,
                 final_epoch: int | None = None):
        self.config, self.run_data, self.out_dir = config, run_data, Path(out_dir)
        self.reference, self.policy, self.final_epoch = reference, policy, final_epoch
        self.inputs: AuditInputs | None = None

    def audit(self, checkpoint, epoch: int) -> dict:
        """The audit of epoch `epoch`, whose checkpoint is `checkpoint`."""
        data = self.run_data
        if self.inputs is None:
            self.inputs = prepare_audit(AutoTokenizer.from_pretrained(str(checkpoint)), data.corpus, data.split,
                                        data.blacklist, self.config, with_reference=self.reference is not None)
        return audit_checkpoint(checkpoint, data.corpus, data.split, data.blacklist, self.out_dir, epoch, self.config,
                                self.reference, checkpoint_epsilon(checkpoint), policy=self.policy, canaries=data.canaries,
                                inputs=self.inputs, final=self.final_epoch is None or epoch >= self.final_epoch)

    def verdict(self) -> list[str]:
        """The verdict report.html opens with, on the latest audited epoch, its reasons and what would resolve it: the
        last lines of a training run (empty before any audit)."""
        epochs = read_epochs(self.out_dir)
        return verdict_lines(epochs[-1], self.policy) if epochs else []
