"""Auditing a saved checkpoint: the one path used after every training epoch and by `ppmlm audit`.

Both load the model from disk rather than auditing the live training module, so the figures of an epoch
are exactly what a later `ppmlm audit` of that checkpoint reproduces, and no training wrapper (DDP,
Opacus) or train-mode state is involved.
"""
from __future__ import annotations

from pathlib import Path

import torch

from ppmlm.audit.config import AuditConfig
from ppmlm.audit.policy import SharingPolicy
from ppmlm.audit.runner import run_audit
from ppmlm.errors import PPMLMError
from ppmlm.models import weights_digests
from ppmlm.rundir import checkpoint_epsilon


def load_masked_lm(path, device: str | torch.device):
    """A masked LM from a local directory, in eval mode; loading never draws from the global RNG."""
    from transformers import AutoModelForMaskedLM

    with torch.random.fork_rng(devices=[]):
        model = AutoModelForMaskedLM.from_pretrained(str(path))
    return model.to(device).eval()


def audit_checkpoint(checkpoint, corpus, split, blacklist, out_dir, epoch: int, config: AuditConfig = AuditConfig(),
                     reference=None, epsilon: dict | None = None, device: str | None = None,
                     policy: SharingPolicy | None = None, canaries: list | None = None) -> dict:
    """`run_audit` on the model and tokenizer saved in `checkpoint`, recording the sha256 of its weights files;
    `reference` is a checkpoint path or None, `policy` the sharing policy the report's verdict applies, `canaries`
    those planted in the corpus (their exposure is measured)."""
    from transformers import AutoTokenizer

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    tokenizer = AutoTokenizer.from_pretrained(str(checkpoint))
    weights = weights_digests(checkpoint)  # before loading: the digests are of what the model is loaded from
    model = load_masked_lm(checkpoint, device)
    reference_model = load_masked_lm(reference, device) if reference is not None else None
    if reference_model is not None and reference_model.config.vocab_size != model.config.vocab_size:
        raise PPMLMError(f"reference {reference} has a vocabulary of {reference_model.config.vocab_size} tokens, "
                         f"the audited model {model.config.vocab_size}: they must share the tokenizer")
    return run_audit(model, tokenizer, corpus, split, blacklist, out_dir, epoch, config, reference_model, epsilon, weights,
                     policy, canaries)


def audit_training_epoch(config: AuditConfig, run_data, checkpoint, epoch: int, out_dir, reference=None,
                         policy: SharingPolicy | None = None) -> dict:
    """The audit of epoch `epoch` of a training run (main process only), with the run's audit settings,
    outputs in `out_dir` (the run's audit/). `reference` is the resolved reference checkpoint (or None),
    trained before training starts, on every process (`reference_checkpoint(cfg, train)`)."""
    return audit_checkpoint(checkpoint, run_data.corpus, run_data.split, run_data.blacklist, Path(out_dir), epoch, config,
                            reference, checkpoint_epsilon(checkpoint), policy=policy, canaries=run_data.canaries)
