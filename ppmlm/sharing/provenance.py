"""Whether the audit beside a checkpoint speaks for it: `ppmlm push` shares figures only when they were measured on
the very weights being shared, against the run's own blacklist and split, and not edited since.

The audit's epoch-N.json records the sha256 of the weights files, the blacklist and the split it measured and of
the run's training settings, with ε and the DP-SGD settings of a DP checkpoint, and is signed with HMAC-SHA256
under the audit directory's private secret (ppmlm/audit/outputs.py). Here the digests are recomputed from the
checkpoint and the run's files, privacy.json is compared, and the signature is checked. This catches an edited
audit file, weights retrained or swapped after their audit, settings or ε edited after it (what the model card
states), and an audit run against another blacklist or split, by anyone who lacks the run's secret. It is not a
signature against whoever holds the run directory: they can audit anything and sign it (docs/sharing.md).
"""
from __future__ import annotations

import hmac
import json
import os
from pathlib import Path

from ppmlm.audit.checkpoint import dp_settings, settings_digest
from ppmlm.audit.outputs import SIGNATURE, audit_secret, signature
from ppmlm.corpus.split import UserSplit
from ppmlm.errors import BlacklistError
from ppmlm.identifiers.blacklist import Blacklist, cached_blacklists
from ppmlm.rundir import RunDirectory, checkpoint_epsilon


def audit_mismatches(run_dir: Path, config: dict, figures: dict, checkpoint: Path, weights: dict[str, str]) -> list[str]:
    """Why the audit `figures` do not speak for `checkpoint`, whose weights files have digests `weights`, one
    phrase each (empty: they do). The phrases name files and settings, never a path or any content, so the
    model card may print them."""
    if SIGNATURE not in figures or "measured" not in figures:
        return ["the audit predates signed digests: it records neither what it measured nor a signature"]
    secret = audit_secret(RunDirectory(run_dir).audit, create=False)
    if secret is None:
        return ["the run's audit secret (audit/.salt) is missing, so the audit's signature cannot be checked"]
    if not hmac.compare_digest(str(figures[SIGNATURE]), signature(figures, secret)):
        return ["the audit file's signature does not match: it was edited after the audit, or signed with another "
                "run's secret"]
    measured = figures["measured"]
    return [*_weights_mismatches(measured.get("weights") or {}, weights),
            *_settings_mismatch(config, measured),
            *_privacy_mismatch(checkpoint, figures),
            *_split_mismatch(run_dir, measured.get("split")),
            *_blacklist_mismatch(run_dir, config, measured.get("blacklist"))]


def _weights_mismatches(audited: dict[str, str], shared: dict[str, str]) -> list[str]:
    if not audited:
        return ["the audit recorded no weights file (it measured a model that was not loaded from this checkpoint)"]
    problems = []
    for name in sorted(set(audited) | set(shared)):
        if name not in audited:
            problems.append(f"weights file {name} was not audited")
        elif name not in shared:
            problems.append(f"audited weights file {name} is missing")
        elif audited[name] != shared[name]:
            problems.append(f"weights file {name} is not the one audited (sha256 {shared[name][:12]}..., "
                            f"audited {audited[name][:12]}...)")
    return problems


def _settings_mismatch(config: dict, measured: dict) -> list[str]:
    """The card states the recipe, blacklist and optimization of the run's config.yaml; the audit recorded the digest
    of the settings its checkpoint was trained with (the keys a resume may change left out)."""
    if "settings" not in measured:
        return ["the audit predates the digest of the run's training settings, so config.yaml cannot be checked"]
    if measured["settings"] is None:
        return ["the audit recorded no training settings (it audited a checkpoint outside its run)"]
    return [] if settings_digest(config) == measured["settings"] else [
        "config.yaml does not hold the training settings the audited checkpoint was trained with"]


def _privacy_mismatch(checkpoint: Path, figures: dict) -> list[str]:
    """The card states ε and the DP-SGD settings the audit signed; a privacy.json beside the weights that says
    otherwise was edited after the audit (or the audit is of another training), and the two cannot both be true."""
    if checkpoint_epsilon(checkpoint) != figures.get("dp"):
        return ["privacy.json (ε, δ and its unit) is not what the audit recorded"]
    if "dp_settings" in figures and dp_settings(checkpoint) != figures["dp_settings"]:  # audits from before it: ε only
        return ["privacy.json (the DP-SGD settings) is not what the audit recorded"]
    return []


def _split_mismatch(run_dir: Path, audited: str | None) -> list[str]:
    path = RunDirectory(run_dir).split
    if not path.is_file():
        return ["the run has no split.json to check the audit's split against"]
    return [] if UserSplit.load(path).digest() == audited else ["split.json is not the user split the audit used"]


def _blacklist_mismatch(run_dir: Path, config: dict, audited: str | None) -> list[str]:
    """The run's blacklist is `blacklist.path`, else the cache entry built with the parameters the run
    recorded in blacklist.json, wherever training read it (`_as_training_read`), so from any folder."""
    settings = config.get("blacklist") or {}
    recorded = RunDirectory(run_dir).blacklist_summary
    key = "blacklist.path" if settings.get("path") else "blacklist.cache_dir"
    if settings.get("path"):
        candidates = _as_training_read(run_dir, config, settings["path"])
    elif recorded.is_file():
        parameters = json.loads(recorded.read_text())["parameters"]
        candidates = [entry for cache in _as_training_read(run_dir, config, settings.get("cache_dir", ""))
                      for entry in cached_blacklists(cache, parameters)]
    else:
        candidates = []
    digests = set()
    for candidate in candidates:
        try:
            digests.add(Blacklist.load(candidate).digest())
        except BlacklistError:
            pass  # not a blacklist (any more): as if not found
    if not digests:
        where = "blacklist.path" if settings.get("path") else "its entry under blacklist.cache_dir"
        return [f"the run's blacklist ({where}) is not found, neither from the folder training ran in nor from this one, "
                f"so the audit's blacklist cannot be checked: run push from the folder training ran in, or make {key} in the "
                "run's config.yaml an absolute path"]
    return [] if audited in digests else ["the run's blacklist is not the one the audit used"]


def _as_training_read(run_dir: Path, config: dict, path) -> list[Path]:
    """Where a path of the run's config.yaml may be: itself when absolute; else, as training read it, from the folder
    training ran in, which a relative `output_dir` tells (the run directory less output_dir's own parts: `runs/ppmlm`
    at /home/me/proj/runs/ppmlm ran in /home/me/proj), and from the current folder."""
    path = Path(path)
    if path.is_absolute():
        return [path]
    output = Path(config.get("output_dir") or "")
    folders = []
    if output.parts and not output.is_absolute() and ".." not in output.parts:
        for run in (Path(os.path.abspath(run_dir)), Path(run_dir).resolve()):  # as given, and through its links
            if run.parts[-len(output.parts):] == output.parts:
                folders.append(Path(*run.parts[: -len(output.parts)]))
    return list(dict.fromkeys(folder / path for folder in [*folders, Path.cwd()]))
