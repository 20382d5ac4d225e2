"""The checkpoint of a training run that is to be shared, with what the card needs from its run: the
resolved configuration, the audit of that epoch (DP accounting included) and whether it speaks for these weights,
and the number of training users. Only counts, settings and digests are read from the sensitive files of the
run (split.json, the blacklist), never their content."""
from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from pathlib import Path

from omegaconf import OmegaConf

from ppmlm.corpus.split import UserSplit
from ppmlm.errors import PPMLMError
from ppmlm.models import weights_digests
from ppmlm.rundir import RunDirectory
from ppmlm.sharing.provenance import audit_mismatches

# Files of a Hugging Face model or tokenizer directory that may leave the machine. Everything else a
# checkpoint holds (state/, privacy.json, the `complete` marker) or may hold stays.
EXPORTED = (
    "config.json", "generation_config.json",
    "model.safetensors", "model-*-of-*.safetensors", "model.safetensors.index.json",
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
    "vocab.txt", "vocab.json", "merges.txt", "spiece.model", "sentencepiece.bpe.model", "tokenizer.model",
)
WEIGHTS = ("model.safetensors", "model.safetensors.index.json")


@dataclass(frozen=True)
class RunCheckpoint:
    run_dir: Path
    epoch: int
    path: Path
    config: dict  # the run's resolved config.yaml
    figures: dict  # audit/epoch-N.json, ε and DP-SGD settings included (checkpoints/epoch-N/privacy.json is not read)
    training_users: int | None
    weights: dict[str, str]  # sha256 of the checkpoint's weights files, by name
    unverified: tuple[str, ...]  # why the audit does not speak for these weights (provenance.py); empty: it does

    def files(self) -> list[Path]:
        """The allow-listed model and tokenizer files of the checkpoint, sorted by name: regular files only. A
        symbolic link under an allowed name (vocab.txt -> the blacklist) is refused, never followed."""
        listed = sorted(p for p in self.path.iterdir() if any(fnmatch.fnmatchcase(p.name, pattern) for pattern in EXPORTED))
        links = [p.name for p in listed if p.is_symlink()]
        if links:
            raise PPMLMError(f"{self.path}: {', '.join(links)} "
                             f"{'is a symbolic link' if len(links) == 1 else 'are symbolic links'}; "
                             "push exports regular files only (a link can point at any file, such as the blacklist): "
                             "put the file itself in the checkpoint")
        files = [p for p in listed if p.is_file()]
        names = {p.name for p in files}
        if "config.json" not in names or not names & set(WEIGHTS) or not names & {"tokenizer.json", "vocab.txt", "vocab.json"}:
            raise PPMLMError(f"{self.path}: not a complete Hugging Face model and tokenizer (config.json, "
                             f"model.safetensors and tokenizer files expected; found {', '.join(sorted(names)) or 'none'})")
        return files


def load_run_checkpoint(run_dir, epoch: int | None = None) -> RunCheckpoint:
    """Checkpoint `epoch` of a run (default: the last complete one) and its audit; refuses one without an audit."""
    run = RunDirectory(run_dir)
    run_dir = run.path
    if not run.config.exists():
        raise PPMLMError(f"{run_dir}: not a training run directory (no config.yaml)")
    epochs = run.complete_epochs()
    if not epochs:
        raise PPMLMError(f"{run_dir}: no complete checkpoint under {run.checkpoints}")
    epoch = epochs[-1] if epoch is None else epoch
    if epoch not in epochs:
        raise PPMLMError(f"{run_dir}: no complete checkpoint for epoch {epoch} (complete: {', '.join(map(str, epochs))})")
    path = run.checkpoint(epoch)
    audit = run.audit_of(epoch)
    if not audit.exists():
        raise PPMLMError(f"{run_dir}: epoch {epoch} has no audit ({audit} missing); a checkpoint is shared only with its "
                         f"audit: ppmlm audit --model {path} --out {run.audit}")
    figures = json.loads(audit.read_text())
    if figures.get("epoch") != epoch:
        raise PPMLMError(f"{audit}: holds the audit of epoch {figures.get('epoch')}, not {epoch}")
    config = OmegaConf.to_container(OmegaConf.load(run.config))
    weights = weights_digests(path)
    return RunCheckpoint(
        run_dir=run_dir, epoch=epoch, path=path, config=config, figures=figures,
        training_users=len(UserSplit.load(run.split).members) if run.split.exists() else None,
        weights=weights, unverified=tuple(audit_mismatches(run_dir, config, figures, path, weights)),
    )
