"""A model directory laid out like `ner_models/clinical_en`: its pipeline.json at a profile, its word lists, its
label map, and the digest that ties a cached blacklist to its rule files."""
from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Iterable

from ppmlm.identifiers.labels import PHI_LABELS
from ppmlm.identifiers.ner.detector_dir import detector_digest
from ppmlm.identifiers.ner.registry import NERError, split_spec
from ppmlm.identifiers.profiles import DEFAULT_PROFILE
from ppmlm.resources import ner_model_folder

DEFAULT_MODEL_DIR = ner_model_folder("clinical_en")  # ner_models/clinical_en in the repository


def read_words(path: Path) -> frozenset[str]:
    """The entries of a word list, lower-cased: one or more per line, whitespace-separated; # starts a
    comment line."""
    return _words(*_version(path))


def read_phrases(path: Path) -> list[str]:
    """The entries of a phrase list, as written: one a line; # starts a comment line."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def read_lists(model_dir: Path, files: Iterable[str] | str) -> frozenset[str]:
    """The union of word lists of a model directory (one file name or several)."""
    files = [files] if isinstance(files, str) else files
    return _union(tuple(_version(Path(model_dir) / name) for name in files))


def _version(path: Path) -> tuple[Path, int, int]:
    """A file as the caches below know it: an edited list is read again."""
    path = Path(path).resolve()
    stat = path.stat()
    return path, stat.st_mtime_ns, stat.st_size


@lru_cache(maxsize=64)
def _words(path: Path, mtime_ns: int, size: int) -> frozenset[str]:
    """Each list read once per process: the rule files name the same large lists (WordNet's 75,000 words) in dozens
    of rules, and every worker process builds the pipeline."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return frozenset(word.lower() for line in lines if not line.startswith("#") for word in line.split())


@lru_cache(maxsize=64)
def _union(versions: tuple[tuple[Path, int, int], ...]) -> frozenset[str]:
    return frozenset().union(*(_words(*version) for version in versions))


def pipeline_config(model_dir: str | Path = DEFAULT_MODEL_DIR, profile: str = DEFAULT_PROFILE) -> dict:
    """pipeline.json of a model directory with the profile's settings merged into its components."""
    config_path = Path(model_dir) / "pipeline.json"
    if not config_path.is_file():
        raise NERError(f"NER model directory {model_dir} has no pipeline.json")
    config = json.loads(config_path.read_text(encoding="utf-8"))
    profiles = config.pop("profiles", {})
    if profile not in profiles and profile != DEFAULT_PROFILE:
        raise NERError(f"{config_path} has no profile {profile!r} (it has {', '.join(profiles) or 'none'})")
    for component, settings in profiles.get(profile, {}).items():
        config[component] = {**config[component], **settings} if isinstance(settings, dict) else settings
    return config


def read_labels(path: Path) -> dict[str, str | None]:
    mapping = {k: v for k, v in json.loads(path.read_text(encoding="utf-8")).items() if not k.startswith("_")}
    bad = {k: v for k, v in mapping.items() if v is not None and v not in PHI_LABELS}
    if bad:
        raise NERError(f"{path}: labels map to unknown categories {bad}; use one of {PHI_LABELS} or null")
    return mapping


def ner_rules_digest(ner: str) -> str | None:
    """A digest of the files a spec's backends read: the default backend's rule files, a trained detector's weights
    and settings (each part of a union "default+detector:DIR"). Editing a rule or training the detector again must not
    reuse blacklists built without it."""
    parts = split_spec(ner)
    if len(parts) > 1:
        digests = [ner_rules_digest(part) for part in parts]
        return None if not any(digests) else hashlib.blake2b("+".join(map(str, digests)).encode(), digest_size=8).hexdigest()
    name, _, arg = ner.partition(":")
    if name == "detector" and arg:
        return detector_digest(arg)
    if name == "presidio":
        return presidio_digest(arg)
    if ner != "default":
        return None
    digest = hashlib.blake2b(digest_size=8)
    for path in sorted(p for p in DEFAULT_MODEL_DIR.rglob("*") if p.is_file()):
        digest.update(path.relative_to(DEFAULT_MODEL_DIR).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def presidio_digest(threshold: str | None) -> str | None:
    """What the presidio backend's spans depend on besides the text: the versions of Presidio, of the libraries its
    recognizers check with and of the spaCy model it runs on, our label map, the threshold (None: not installed)."""
    config = pipeline_config()
    try:
        versions = [metadata.version(package) for package in
                    ("presidio-analyzer", "phonenumbers", "tldextract", "spacy", config["spacy_model"])]
    except metadata.PackageNotFoundError:
        return None
    digest = hashlib.blake2b(" ".join([*versions, str(threshold)]).encode(), digest_size=8)
    digest.update((DEFAULT_MODEL_DIR / config["labels"]).read_bytes())
    return digest.hexdigest()
