"""The synthetic corpora by domain, chosen by `ppmlm synth --domain` and `data.synth_domain`.

Each domain is a spec of one engine (ppmlm/corpus/engine.py: a vocabulary file under vocabularies/ and the
functions that compose its documents), so both write the same fields (doc_id, user_id, text, label, phi) with the
same statistical shape and every stage and experiment runs on either. A domain's module (and Faker with it) is
imported only when asked for, which keeps the CLI's start fast.
"""
from __future__ import annotations

from ppmlm.errors import PPMLMError

SYNTHETIC_DOMAINS = ("clinical", "legal")  # clinical: the embedded default


def generate_synthetic(domain: str, n_users: int, seed: int = 0) -> list[dict]:
    """Records of `n_users` synthetic users (patients or cases) of `domain`, identical for the same arguments."""
    if domain == "clinical":
        from ppmlm.corpus.clinical import generate_corpus as generate
    elif domain == "legal":
        from ppmlm.corpus.legal import generate_legal_corpus as generate
    else:
        raise PPMLMError(f"unknown synthetic corpus domain {domain!r}: expected one of {', '.join(SYNTHETIC_DOMAINS)}")
    return generate(n_users, seed=seed)

