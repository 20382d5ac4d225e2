"""The audit directory: per-epoch figures, scores files and the pseudonyms that keep user ids out of them.

    epoch-N.json                       every figure of epoch N; counts and rates only, no identifier
    scores-epoch-N-samples.jsonl       one line per audited chunk: pseudonymous ids, member label, scores
    scores-epoch-N-users.jsonl         one line per audited user: member label, scores
    report.html                        the self-contained report over every epoch present
    .salt                              the key of the pseudonyms (keep private: with it, known user ids
                                       can be matched to their lines)
    .reference-energies/               the reference model's energies, reused by later epochs
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
from pathlib import Path

EPOCH_FILE = re.compile(r"epoch-(\d+)\.json$")


class Pseudonyms:
    """Keyed hashes of user and document ids, stable within one audit directory (so a user can be followed
    from epoch to epoch) and unlinkable to the ids without the directory's salt."""

    def __init__(self, out_dir: Path):
        path = out_dir / ".salt"
        if not path.exists():
            out_dir.mkdir(parents=True, exist_ok=True)
            write_atomically(path, secrets.token_hex(16))
        self._salt = bytes.fromhex(path.read_text().strip())

    def __call__(self, kind: str, value: str) -> str:
        return hashlib.blake2b(f"{kind}\x00{value}".encode(), key=self._salt, digest_size=8).hexdigest()


def write_atomically(path: Path, text: str) -> None:
    """A reader (the report, a person) never sees half a file."""
    staging = path.with_name(f".{path.name}.tmp")
    staging.write_text(text, encoding="utf-8")
    os.replace(staging, path)


def write_jsonl(path: Path, rows: list[dict]) -> None:
    write_atomically(path, "".join(json.dumps(row, allow_nan=False) + "\n" for row in rows))


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line]


def scores_paths(out_dir: Path, epoch: int) -> tuple[Path, Path]:
    return out_dir / f"scores-epoch-{epoch}-samples.jsonl", out_dir / f"scores-epoch-{epoch}-users.jsonl"


def write_epoch(out_dir: Path, figures: dict, sample_rows: list[dict], user_rows: list[dict]) -> Path:
    samples_path, users_path = scores_paths(out_dir, figures["epoch"])
    write_jsonl(samples_path, sample_rows)
    write_jsonl(users_path, user_rows)
    path = out_dir / f"epoch-{figures['epoch']}.json"
    write_atomically(path, json.dumps(figures, indent=1, allow_nan=False) + "\n")
    return path


def read_epochs(out_dir: Path) -> list[dict]:
    """Every epoch-N.json of the directory, in epoch order."""
    found = [(int(m.group(1)), p) for p in Path(out_dir).glob("epoch-*.json") if (m := EPOCH_FILE.search(p.name))]
    return [json.loads(p.read_text(encoding="utf-8")) for _, p in sorted(found)]


def reference_cache(out_dir: Path, key: str) -> Path:
    return out_dir / ".reference-energies" / f"{key}.json"
