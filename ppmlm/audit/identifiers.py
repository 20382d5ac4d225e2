"""What the model's predictions reveal about identifiers: the privacy score, regurgitation counts and the
identifier-count membership attack (Boutet et al., sections 5.1 and 5.4).

Only one-word identifiers are scored: the model fills one masked word at a time, so an n-gram identifier
(a full name, a date written in three words) counts through its words that are identifiers on their own
(each word of a name is). Predictions and identifiers are compared as the model sees text: a predicted
word is read back from its subword tokens, normalized like blacklist terms, then passed through the
tokenizer's own normalizer (an uncased model can only ever say "smith", so "Smith" is compared as that).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ppmlm.identifiers.blacklist import BOTH, DIRECT, INDIRECT
from ppmlm.identifiers.graph import GraphBuilder


class WordReader:
    """Maps words (identifier terms, the original words of the text, predicted subword ids) to one key."""

    def __init__(self, tokenizer, segmenter):
        self.tokenizer = tokenizer
        self.segmenter = segmenter
        backend = getattr(tokenizer, "backend_tokenizer", None)
        self._model_normalizer = backend.normalizer if backend is not None else None
        self._decoded: dict[tuple[int, ...], str | None] = {}

    def key(self, text: str | None) -> str | None:
        term = self.segmenter.normalize(text) if text else None
        if term is None or self._model_normalizer is None:
            return term
        return self._model_normalizer.normalize_str(term).strip() or None

    def predicted(self, prediction, original_term: str | None) -> str | None:
        """The key of the word the model predicted; the original word's own key when every subword is right."""
        if prediction.correct:
            return self.key(original_term)
        if prediction.predicted not in self._decoded:
            text = self.tokenizer.decode(list(prediction.predicted), skip_special_tokens=True,
                                         clean_up_tokenization_spaces=False).strip()
            self._decoded[prediction.predicted] = self.key(text)
        return self._decoded[prediction.predicted]


@dataclass
class Identifiers:
    """One-word identifiers of the blacklist by key, with their kinds, and how many n-gram ones are left out."""

    kinds: dict[str, set[str]]
    ngrams_not_scored: int

    @classmethod
    def from_blacklist(cls, blacklist, reader: WordReader) -> "Identifiers":
        kinds: dict[str, set[str]] = {}
        ngrams = 0
        for term, entry in blacklist.terms.items():
            if entry.n > 1 or " " in term:
                ngrams += 1
                continue
            key = reader.key(term)
            if key is not None:
                kinds.setdefault(key, set()).update((DIRECT, INDIRECT) if entry.kind == BOTH else (entry.kind,))
        return cls(kinds, ngrams)


def privacy_score(identifiers: Identifiers, in_audited_text: set[str], predicted: Counter,
                  training_occurrences: dict[str, int]) -> dict:
    """Share of identifiers never predicted (1.0: none leaked), over the identifiers that occur in the
    audited training chunks, for all of them and per kind; identifiers predicted although absent from the
    audited chunks are counted apart (`leaked_elsewhere`). `regurgitation` pairs, for every predicted
    identifier, its occurrences in training with the times it was predicted (Figure 5): counts only."""
    scope = {key for key in in_audited_text if key in identifiers.kinds}
    leaked = {key for key in scope if predicted[key] > 0}
    elsewhere = {key for key in identifiers.kinds if key not in scope and predicted[key] > 0}

    def share(keys: set[str], hits: set[str]) -> dict:
        return {"identifiers": len(keys), "leaked": len(hits), "score": 1.0 - len(hits) / len(keys) if keys else 1.0}

    by_kind = {kind: share({k for k in scope if kind in identifiers.kinds[k]}, {k for k in leaked if kind in identifiers.kinds[k]})
               for kind in (DIRECT, INDIRECT)}
    pairs = sorted((training_occurrences.get(key, 0), predicted[key]) for key in leaked | elsewhere)
    return {
        **share(scope, leaked),
        **by_kind,
        "leaked_elsewhere": len(elsewhere),
        "ngram_identifiers_not_scored": identifiers.ngrams_not_scored,
        "regurgitation": {"training_occurrences": [p[0] for p in pairs], "predictions": [p[1] for p in pairs]},
    }


class AuditorGraph:
    """The users × words graph over members and audit non-members together: the auditor holds all their
    data, so a word is an indirect identifier of a user when fewer than k of all these users write it."""

    def __init__(self, corpus, members: set[str], non_members: set[str], segmenter, reader: WordReader):
        users = members | non_members
        records = [(u, t) for u, t in zip(corpus["user_id"], corpus["text"]) if u in users]
        builder = GraphBuilder(1)
        for (user, _), words in zip(records, segmenter.pipe([t for _, t in records])):
            builder.add(user, words)
        graph = builder.build()
        # Terms that differ only in what the model cannot see (case, for an uncased model) are one key.
        keys = [reader.key(term) for term in graph.terms]
        key_ids: dict[str, int] = {}
        columns = [key_ids.setdefault(key, len(key_ids)) for key in keys if key is not None]
        kept = np.array([key is not None for key in keys], dtype=bool)
        to_keys = sp.csr_array((np.ones(len(columns)), (np.flatnonzero(kept), columns)), shape=(len(keys), len(key_ids)))
        by_key = graph.matrix @ to_keys
        member_rows = np.array([u in members for u in graph.users], dtype=bool)
        degree = np.asarray((by_key > 0).sum(axis=0)).ravel()
        in_training = np.asarray(by_key[member_rows].sum(axis=0)).ravel()
        self.degree = {key: int(degree[i]) for key, i in key_ids.items()}
        self.training_occurrences = {key: int(in_training[i]) for key, i in key_ids.items()}

    def indirect(self, keys: set[str], k: int) -> set[str]:
        return {key for key in keys if self.degree.get(key, 0) < k}


def identifier_count(user_identifiers: set[str], user_predicted: set[str]) -> tuple[int, float]:
    """The identifier-count attack's scores of one user: how many of their indirect identifiers the model
    predicted, and that count over how many they have (0 when they have none)."""
    count = len(user_identifiers & user_predicted)
    return count, count / len(user_identifiers) if user_identifiers else 0.0
