"""Where a training run's blacklist is cached: one key, built from the run's `blacklist` section, for the
training that writes the cache entry and for the audit, `ppmlm push` and notebooks that look it up.

The entry is named by a hash of the members' corpus fingerprint and the parameters below; its stats.json
records the same parameters, so a lookup needs no hash, only the run's configuration.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ppmlm.identifiers.blacklist import corpus_fingerprint
from ppmlm.identifiers.ner import ner_rules_digest
from ppmlm.identifiers.profiles import DEFAULT_PROFILE


def run_blacklist_parameters(blacklist_cfg, casefold: bool) -> dict:
    """What shapes a run's blacklist: its settings, whether terms are case folded, and the default NER's rules."""
    return {"k": blacklist_cfg.k, "n": blacklist_cfg.n, "ner": blacklist_cfg.ner, "spans_from": blacklist_cfg.spans_from,
            "casefold": casefold, "ner_rules": ner_rules_digest(blacklist_cfg.ner),
            "profile": getattr(blacklist_cfg, "profile", DEFAULT_PROFILE)}


def cache_entry(blacklist_cfg, members, parameters: dict) -> Path:
    """The cache folder of the blacklist of `members` (the training users' documents) built with `parameters`."""
    key = hashlib.blake2b((corpus_fingerprint(members) + json.dumps(parameters, sort_keys=True)).encode(),
                          digest_size=12).hexdigest()
    return Path(blacklist_cfg.cache_dir) / key
