"""ppmlm: privacy-preserving fine-tuning of BERT-like masked language models, audited after every epoch.

The public API, one stage per line (README, "Python API"):

    load_corpus, split_users, UserSplit, generate_synthetic   the corpus, its users' split, a synthetic one
    build_blacklist, Blacklist, load_ner, register_ner         direct and indirect identifiers
    build_features, PrivacyMaskingCollator                    tokenized chunks, masking that spares identifiers
    compose_config, train                                     a recipe's configuration, and training it
    audit_checkpoint, AuditConfig                             the membership-inference audit of a checkpoint
    prepare_trainer_run, PrivacyAuditCallback                 the same in your own Hugging Face Trainer script
    push_run, SharingPolicy                                   sharing a checkpoint that passed its audit

Names are imported on first use, so `import ppmlm` (and the `ppmlm` command) does not load torch or the
Hugging Face libraries until a name needs them.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_HOMES = {
    "load_corpus": "ppmlm.corpus.loading",
    "split_users": "ppmlm.corpus.split",
    "UserSplit": "ppmlm.corpus.split",
    "generate_synthetic": "ppmlm.corpus.domains",
    "build_blacklist": "ppmlm.identifiers.blacklist",
    "Blacklist": "ppmlm.identifiers.blacklist",
    "load_ner": "ppmlm.identifiers.ner",
    "register_ner": "ppmlm.identifiers.ner",
    "build_features": "ppmlm.features",
    "PrivacyMaskingCollator": "ppmlm.masking.collator",
    "compose_config": "ppmlm.pipeline",
    "train": "ppmlm.pipeline",
    "audit_checkpoint": "ppmlm.audit.checkpoint",
    "AuditConfig": "ppmlm.audit.config",
    "prepare_trainer_run": "ppmlm.hf",
    "PrivacyAuditCallback": "ppmlm.hf",
    "push_run": "ppmlm.sharing.push",
    "SharingPolicy": "ppmlm.audit.policy",
}

__all__ = ["__version__", "load_corpus", "split_users", "UserSplit", "generate_synthetic", "build_blacklist", "Blacklist",
           "load_ner", "register_ner", "build_features", "PrivacyMaskingCollator", "compose_config", "train",
           "audit_checkpoint", "AuditConfig", "prepare_trainer_run", "PrivacyAuditCallback", "push_run", "SharingPolicy"]

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time `__getattr__` imports on first use
    from ppmlm.audit.checkpoint import audit_checkpoint
    from ppmlm.audit.config import AuditConfig
    from ppmlm.audit.policy import SharingPolicy
    from ppmlm.corpus.domains import generate_synthetic
    from ppmlm.corpus.loading import load_corpus
    from ppmlm.corpus.split import UserSplit, split_users
    from ppmlm.features import build_features
    from ppmlm.hf import PrivacyAuditCallback, prepare_trainer_run
    from ppmlm.identifiers.blacklist import Blacklist, build_blacklist
    from ppmlm.identifiers.ner import load_ner, register_ner
    from ppmlm.masking.collator import PrivacyMaskingCollator
    from ppmlm.pipeline import compose_config, train
    from ppmlm.sharing.push import push_run

    __version__: str


def __getattr__(name: str):
    if name == "__version__":  # the installed distribution's, read once asked for
        from importlib.metadata import version

        value = version("ppmlm")
    elif name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name]), name)
    else:
        raise AttributeError(f"module 'ppmlm' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
