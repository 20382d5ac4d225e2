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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.stats import binomtest

from ppmlm.errors import PPMLMError
from ppmlm.identifiers.blacklist import BOTH, DIRECT, INDIRECT, Blacklist, gold_spans, span_words
from ppmlm.identifiers.graph import GraphBuilder

AUTO, AUTO_COLUMN = "auto", "phi"


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
    """One-word identifiers by key, with their kinds (and categories, when known), and how many n-gram ones
    are left out."""

    kinds: dict[str, set[str]]
    ngrams_not_scored: int
    labels: dict[str, set[str]] = field(default_factory=dict)
    unprotected: set[str] | None = None  # keys with an occurrence the training blacklist left unprotected

    @classmethod
    def from_spans(cls, corpus, column: str, users: set[str], segmenter, reader: WordReader, training) -> "Identifiers":
        """Every word inside the spans of corpus column `column` (gold annotations, {start, end, label} per
        span) in the documents of `users`, with its spans' labels: an answer key that owes nothing to the
        training blacklist. Gold spans are direct identifiers. `unprotected` holds those with at least one
        occurrence that the `training` blacklist does not protect (neither a term nor in its span there)."""
        if column not in corpus.column_names:
            raise PPMLMError(f"audit.identifiers_from={column}: the corpus has no such column and it is not a blacklist "
                             f"directory (columns: {', '.join(corpus.column_names)})")
        documents = corpus.filter(lambda user: user in users, input_columns="user_id")
        spans = gold_spans(documents, column)
        labels: dict[str, set[str]] = {}
        unprotected: set[str] = set()
        for doc_id, words in zip(documents["doc_id"], segmenter.pipe(documents["text"])):
            if doc_id not in spans:
                continue
            protected = training.protected_words(words, doc_id)
            for span, first, stop in zip(spans[doc_id], *span_words(words, spans[doc_id])):
                for i in range(first, stop):
                    key = reader.key(words.terms[i])
                    if key is not None:
                        labels.setdefault(key, set()).add(span.label)
                        if not protected[i]:
                            unprotected.add(key)
        return cls({key: {DIRECT} for key in labels}, 0, labels, unprotected)

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


def leak_share(keys: set[str], hits: set[str], confidence: float) -> dict:
    """Share of `keys` never predicted, with its Clopper-Pearson interval (exact binomial over the audited
    identifiers; None when there are none)."""
    if not keys:
        return {"identifiers": 0, "leaked": 0, "score": 1.0, "score_ci": None}
    low, high = binomtest(len(hits), len(keys)).proportion_ci(confidence, method="exact")
    return {"identifiers": len(keys), "leaked": len(hits), "score": 1.0 - len(hits) / len(keys),
            "score_ci": [1.0 - float(high), 1.0 - float(low)]}


def privacy_score(identifiers: Identifiers, in_audited_text: set[str], predicted: Counter,
                  training_occurrences: dict[str, int], confidence: float = 0.95) -> dict:
    """Share of identifiers never predicted (1.0: none leaked), over the identifiers that occur in the
    audited training chunks, for all of them and per kind; identifiers predicted although absent from the
    audited chunks are counted apart (`leaked_elsewhere`). Each score has its exact binomial interval at
    `confidence` (`score_ci`). `regurgitation` pairs, for every predicted
    identifier, its occurrences in training with the times it was predicted (Figure 5): counts only."""
    scope = {key for key in in_audited_text if key in identifiers.kinds}
    leaked = {key for key in scope if predicted[key] > 0}
    elsewhere = {key for key in identifiers.kinds if key not in scope and predicted[key] > 0}

    by_kind = {kind: leak_share({k for k in scope if kind in identifiers.kinds[k]},
                                {k for k in leaked if kind in identifiers.kinds[k]}, confidence)
               for kind in (DIRECT, INDIRECT)}
    by_label = {label: leak_share({k for k in scope if label in identifiers.labels.get(k, ())},
                                  {k for k in leaked if label in identifiers.labels.get(k, ())}, confidence)
                for label in sorted(set().union(*identifiers.labels.values()))}
    pairs = sorted((training_occurrences.get(key, 0), predicted[key]) for key in leaked | elsewhere)
    return {
        **leak_share(scope, leaked, confidence),
        **by_kind,
        **({"by_label": by_label} if identifiers.labels else {}),
        "leaked_elsewhere": len(elsewhere),
        "ngram_identifiers_not_scored": identifiers.ngrams_not_scored,
        "regurgitation": {"training_occurrences": [p[0] for p in pairs], "predictions": [p[1] for p in pairs]},
    }


def independent_identifiers(spec: str | None, corpus, members: set[str], training, reader: WordReader):
    """(identifiers, source) of `audit.identifiers_from`: a blacklist directory, a corpus column of gold
    spans, "auto" (the `phi` column when the corpus has one, as the embedded synthetic corpus does) or
    None; None when there is none to check. `training` is the training blacklist. `source` describes it
    without naming a path."""
    if spec is None or (spec == AUTO and AUTO_COLUMN not in corpus.column_names):
        return None
    if Path(spec).is_dir():
        other = Blacklist.load(spec)
        return Identifiers.from_blacklist(other, reader), f"another blacklist (sha256 {other.digest()[:16]})"
    column = AUTO_COLUMN if spec == AUTO else spec
    return (Identifiers.from_spans(corpus, column, members, training.segmenter, reader, training),
            f"gold spans of corpus column {column!r}")


def independent_privacy(identifiers: Identifiers, source: str, training: Identifiers, in_audited_text: set[str],
                        predicted: Counter, training_occurrences: dict[str, int], confidence: float) -> dict:
    """`privacy_score` against an independent answer key, and `missed_by_blacklist`: how many of its
    identifiers in the audited chunks training left unprotected (gold spans: at one occurrence at least;
    another blacklist: not among the training blacklist's one-word terms), and how many of those the model
    predicted."""
    figures = privacy_score(identifiers, in_audited_text, predicted, training_occurrences, confidence)
    missed = {key for key in in_audited_text if key in identifiers.kinds
              and (key in identifiers.unprotected if identifiers.unprotected is not None else key not in training.kinds)}
    leaked = {key for key in missed if predicted[key] > 0}
    return {"source": source, **figures, "missed_by_blacklist": {"identifiers": len(missed), "leaked": len(leaked)}}


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
