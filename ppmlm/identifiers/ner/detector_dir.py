"""The directory of a trained detector (`ppmlm detector train --out DIR`), and what is read of it without loading
the model: the `detector:DIR` backend's settings, the digest that ties a cached blacklist to it, and the marker
that keeps it out of a push.

    .ppmlm-detector   marker: {"kind": "ppmlm-detector", "format": 1, "sensitive": true}
    detector.json     entity types and their PHI categories, the decision threshold, the windows, and the
                      training's counts and held-out figures (no text, no user id)
    README.md         its card
    config.json, model.safetensors, tokenizer files: a Hugging Face token classifier over BIO tags

The directory is sensitive like the corpus it was trained on: its weights may have memorized names of the
annotated notes. It is shared only where those notes may go, and `ppmlm push` refuses it.
"""
from __future__ import annotations

import fnmatch
import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ppmlm.identifiers.ner.registry import NERError
from ppmlm.models import WEIGHT_FILES

MARKER = ".ppmlm-detector"
MARKER_CONTENT = {"kind": "ppmlm-detector", "format": 1, "sensitive": True}
SETTINGS = "detector.json"


@dataclass(frozen=True)
class DetectorSettings:
    """What inference needs (detector.json), and what the training measured (`training`: counts and figures)."""

    types: list[str]  # entity types, as the annotations name them; tags are O, B-type, I-type in this order
    categories: dict[str, str]  # entity type -> the PHI category its spans get
    threshold: float  # a word is an identifier when P(not O) of one of its tokens reaches this
    max_length: int  # tokens per window, special tokens included
    stride: int  # tokens a window shares with the one before it
    training: dict = field(default_factory=dict)

    @property
    def tags(self) -> list[str]:
        return tag_names(self.types)

    def save(self, directory: Path) -> None:
        (Path(directory) / SETTINGS).write_text(json.dumps(asdict(self), indent=1) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, directory) -> "DetectorSettings":
        directory = check_detector_dir(directory)
        try:
            return cls(**json.loads((directory / SETTINGS).read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError) as error:
            raise NERError(f"{directory / SETTINGS}: not the settings of a ppmlm detector ({error})") from None


def tag_names(types: list[str]) -> list[str]:
    """The BIO tags of a detector over `types`: O, then B- and I- of each type."""
    return ["O"] + [f"{prefix}-{name}" for name in types for prefix in ("B", "I")]


def is_detector_dir(path) -> bool:
    return (Path(path) / MARKER).is_file()


def enclosing_detector(path) -> Path | None:
    """The detector directory `path` is, or lies inside; None when it is none's."""
    path = Path(path).resolve()
    return next((folder for folder in (path, *path.parents) if is_detector_dir(folder)), None)


def check_detector_dir(directory) -> Path:
    """The directory, when it holds a detector this ppmlm can read; else one NERError naming it."""
    directory = Path(directory)
    if not directory.is_dir():
        raise NERError(f"detector:{directory}: no such directory (train one with ppmlm detector train --out DIR)")
    if not is_detector_dir(directory):
        raise NERError(f"detector:{directory}: not a detector directory (no {MARKER}; ppmlm detector train writes one)")
    try:
        format_ = json.loads((directory / MARKER).read_text(encoding="utf-8")).get("format", 0)
    except (OSError, ValueError, AttributeError):
        format_ = None
    if format_ != MARKER_CONTENT["format"]:
        raise NERError(f"detector:{directory}: detector format {format_}, this ppmlm reads format "
                       f"{MARKER_CONTENT['format']}: train it again with this version")
    return directory


def detector_digest(directory) -> str:
    """A digest of the files that decide a detector's spans (settings and weights): a blacklist cached with one
    detector is not reused with another, or with the same directory trained again."""
    directory = check_detector_dir(directory)
    digest = hashlib.blake2b(digest_size=8)
    for path in sorted(directory.iterdir()):
        if path.name == SETTINGS or any(fnmatch.fnmatchcase(path.name, pattern) for pattern in WEIGHT_FILES):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()
