"""The synthetic corpora by domain, chosen by `ppmlm synth --domain` and `data.synth_domain`.

Both generators write the same fields (doc_id, user_id, text, label, phi) with the same statistical
shape, so every stage and experiment runs on either; generators are imported only when asked for.
"""
from __future__ import annotations

from ppmlm.errors import PPMLMError

SYNTHETIC_DOMAINS = ("clinical", "legal")  # clinical: the embedded default


def generate_synthetic(domain: str, n_users: int, seed: int = 0) -> list[dict]:
    """Records of `n_users` synthetic users (patients or cases) of `domain`, identical for the same arguments."""
    if domain == "clinical":
        from ppmlm.corpus.synth import generate_corpus as generate
    elif domain == "legal":
        from ppmlm.corpus.legal import generate_legal_corpus as generate
    else:
        raise PPMLMError(f"unknown synthetic corpus domain {domain!r}: expected one of {', '.join(SYNTHETIC_DOMAINS)}")
    return generate(n_users, seed=seed)

