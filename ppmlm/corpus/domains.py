"""The synthetic corpora by domain, chosen by `ppmlm synth --domain` and `data.synth_domain`.

Both generators write the same fields (doc_id, user_id, text, label, phi) with the same statistical
shape, so every stage and experiment runs on either; generators are imported only when asked for.
"""
from __future__ import annotations

import datasets

from ppmlm.corpus.loading import load_corpus
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


def embedded_corpus(users: int, seed: int, domain: str = "clinical") -> datasets.Dataset:
    return load_corpus(datasets.Dataset.from_list(generate_synthetic(domain, users, seed=seed)))


def load_run_corpus(data_cfg, seed: int) -> datasets.Dataset:
    """The corpus a run's `data` section names: its file, or the embedded synthetic corpus it generates."""
    if data_cfg.path is None:  # configs of runs from before data.synth_domain trained on the clinical corpus
        return embedded_corpus(data_cfg.synth_users, seed, data_cfg.get("synth_domain", "clinical"))
    return load_corpus(data_cfg.path, data_cfg.text_column, data_cfg.user_column, data_cfg.doc_id_column)
