"""The audit directory: per-epoch figures, scores files and the pseudonyms that keep user ids out of them.

    epoch-N.json                       every figure of epoch N; counts and rates only, no identifier; the
                                       sha256 of the weights, blacklist and split it measured, and an
                                       HMAC-SHA256 signature of it all keyed by the directory's secret
    scores-epoch-N-samples.jsonl       one line per audited chunk: pseudonymous ids, member label, scores
    scores-epoch-N-users.jsonl         one line per audited user: member label, scores
    scores-epoch-N-population.jsonl    one line per population chunk of the reference-calibrated attack
                                       (pseudonymous ids, losses, log ratio): with the samples file, it
                                       recomputes every rmia_score
    scores-epoch-N-canaries.jsonl      one line per one-run canary: pseudonymous id, trained on (1/0), score,
                                       guess (in, out, abstain): it recomputes the empirical ε
    report.html                        the self-contained report over every epoch present
    .salt                              the directory's secret, the key of the pseudonyms and of the
                                       signatures (keep private: with it, known user ids can be matched
                                       to their lines, and an edited epoch-N.json signed again)
    .reference-energies/               the reference model's energies, reused by later epochs
"""
from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from pathlib import Path

from ppmlm.errors import PPMLMError
from ppmlm.files import write_atomically

EPOCH_FILE = re.compile(r"epoch-(\d+)\.json$")
SECRET = ".salt"
SIGNATURE = "signature"  # the field of epoch-N.json holding its HMAC-SHA256


def audit_secret(out_dir: Path, create: bool = True) -> bytes | None:
    """The audit directory's private secret, made on first use (`create`); None when there is none."""
    path = Path(out_dir) / SECRET
    if not path.exists():
        if not create:
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, secrets.token_hex(16))
    return bytes.fromhex(path.read_text().strip())


def signature(figures: dict, secret: bytes) -> str:
    """HMAC-SHA256 of an epoch's figures (every field but the signature, as canonical JSON), under a key
    derived from the directory's secret so that it never doubles as the pseudonyms' key."""
    key = hmac.new(secret, b"ppmlm audit epoch-N.json signature", hashlib.sha256).digest()
    body = json.dumps({k: v for k, v in figures.items() if k != SIGNATURE}, sort_keys=True, separators=(",", ":"))
    return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()


class Pseudonyms:
    """Keyed hashes of user and document ids, stable within one audit directory (so a user can be followed
    from epoch to epoch) and unlinkable to the ids without the directory's secret."""

    def __init__(self, out_dir: Path):
        self._salt = audit_secret(out_dir)

    def __call__(self, kind: str, value: str) -> str:
        return hashlib.blake2b(f"{kind}\x00{value}".encode(), key=self._salt, digest_size=8).hexdigest()


def write_jsonl(path: Path, rows: list[dict]) -> None:
    write_atomically(path, "".join(json.dumps(row, allow_nan=False) + "\n" for row in rows))


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line]


def scores_paths(out_dir: Path, epoch: int) -> tuple[Path, Path]:
    return out_dir / f"scores-epoch-{epoch}-samples.jsonl", out_dir / f"scores-epoch-{epoch}-users.jsonl"


def population_scores_path(out_dir: Path, epoch: int) -> Path:
    return out_dir / f"scores-epoch-{epoch}-population.jsonl"


def write_epoch(out_dir: Path, figures: dict, sample_rows: list[dict], user_rows: list[dict],
                population_rows: list[dict] = ()) -> dict:
    """Writes the scores files (the population file when there are population rows) and epoch-N.json, signed;
    returns the figures as written."""
    samples_path, users_path = scores_paths(out_dir, figures["epoch"])
    write_jsonl(samples_path, sample_rows)
    write_jsonl(users_path, user_rows)
    if population_rows:
        write_jsonl(population_scores_path(out_dir, figures["epoch"]), list(population_rows))
    signed = {**figures, SIGNATURE: signature(figures, audit_secret(out_dir))}
    write_atomically(out_dir / f"epoch-{figures['epoch']}.json", json.dumps(signed, indent=1, allow_nan=False) + "\n")
    return signed


def read_epochs(out_dir: Path) -> list[dict]:
    """Every epoch-N.json of the directory, in epoch order."""
    found = [(int(m.group(1)), p) for p in Path(out_dir).glob("epoch-*.json") if (m := EPOCH_FILE.search(p.name))]
    return [json.loads(p.read_text(encoding="utf-8")) for _, p in sorted(found)]


OWN_NAME = re.compile(r"(epoch-\d+\.json|scores-epoch-\d+-(samples|users|population|inversion|canaries)\.jsonl|report\.html"
                      r"|\.salt|\.reference-energies|\.[^/]+\.tmp[^/]*)$")


def check_audit_dir(out_dir) -> Path:
    """Refuses an --out that an audit would write into without owning it: a file, or a folder that holds anything
    but an audit's files, or an audit's files without the secret that signed them. Called before the audit runs,
    so that a user's folder is never written into (epoch-N.json and report.html are common names)."""
    out_dir = Path(out_dir)
    advice = "choose a new or empty directory, or an audit directory of ppmlm"
    if out_dir.exists() and not out_dir.is_dir():
        raise PPMLMError(f"--out {out_dir}: is a file; {advice}")
    if out_dir.is_dir():
        names = sorted(p.name for p in out_dir.iterdir())
        foreign = [name for name in names if not OWN_NAME.fullmatch(name)]
        if foreign or (names and SECRET not in names):
            shown = foreign or names
            raise PPMLMError(f"--out {out_dir}: holds files that are not a ppmlm audit's ({', '.join(shown[:3])}"
                             f"{', ...' if len(shown) > 3 else ''}); {advice}")
    return out_dir


def check_audits_are_of(out_dir, weights: dict[str, str], own_checkpoint: bool = False) -> None:
    """Refuses an --out holding audits of other weights (`weights`: the sha256 of the audited checkpoint's weights
    files): an audit there would replace and sign again another model's audit of that epoch, or file this model's
    under the other's report. A folder of audits of these weights may be audited again. `own_checkpoint`: --out is
    the audit folder of the run the checkpoint belongs to, filed under the checkpoint's own epoch: its audits of
    the other epochs are of other weights by nature, and the audit of this epoch is redone (how a stale one is
    repaired)."""
    if own_checkpoint:
        return
    for path in sorted(Path(out_dir).glob("epoch-*.json")):
        try:
            audited = (json.loads(path.read_text(encoding="utf-8")).get("measured") or {}).get("weights")
        except (UnicodeDecodeError, json.JSONDecodeError, AttributeError):
            audited = None
        if audited != weights:
            held = ("an audit that records no weights digest" if not audited else
                    "the audit of other weights (" + ", ".join(f"{name} sha256 {digest[:12]}..." for name, digest in
                                                             sorted(audited.items())) + ")")
            raise PPMLMError(f"--out {out_dir}: {path.name} holds {held}, not of this checkpoint's weights "
                             f"({', '.join(f'{name} sha256 {digest[:12]}...' for name, digest in sorted(weights.items()))}); "
                             "auditing here would replace or mix with another model's audits: choose a new or empty "
                             "directory")


def reference_cache(out_dir: Path, key: str) -> Path:
    return out_dir / ".reference-energies" / f"{key}.json"
