"""The synthetic corpora by domain, chosen by `ppmlm synth --domain` and `data.synth_domain`.

Each domain is a spec of one engine (ppmlm/corpus/engine.py: a vocabulary file under vocabularies/ and the
functions that compose its documents), so both write the same fields (doc_id, user_id, text, label, phi) with the
same statistical shape and every stage and experiment runs on either. A domain's module (and Faker with it) is
imported only when asked for, which keeps the CLI's start fast.
"""
from __future__ import annotations

from typing import Iterator

from ppmlm.errors import PPMLMError

SYNTHETIC_DOMAINS = ("clinical", "legal")  # clinical: the embedded default


def synthetic_records(domain: str, n_users: int, seed: int = 0) -> Iterator[dict]:
    """The records of `generate_synthetic`, one user after the other: `ppmlm synth` streams them to its file, so a
    corpus of millions of notes needs the memory of one user's."""
    from ppmlm.corpus.engine import generate_records

    return generate_records(_spec(domain), n_users, seed)


def generate_synthetic(domain: str, n_users: int, seed: int = 0) -> list[dict]:
    """Records of `n_users` synthetic users (patients or cases) of `domain`, identical for the same arguments."""
    return list(synthetic_records(domain, n_users, seed))


def _spec(domain: str):
    if domain == "clinical":
        from ppmlm.corpus.clinical import clinical_spec

        return clinical_spec()
    if domain == "legal":
        from ppmlm.corpus.legal import LEGAL

        return LEGAL
    raise PPMLMError(f"unknown synthetic corpus domain {domain!r}: expected one of {', '.join(SYNTHETIC_DOMAINS)}")
