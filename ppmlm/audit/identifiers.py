"""What the model's predictions reveal about identifiers: the privacy score, regurgitation counts and the
identifier-count membership attack (Boutet et al., sections 5.1 and 5.4).

Only one-word identifiers are scored: the model fills one masked word at a time, so an n-gram identifier
(a full name, a date written in three words) counts through its words that are identifiers on their own
(each word of a name is). Predictions and identifiers are compared as the model sees text: a predicted
word is read back from its subword tokens, normalized like blacklist terms, then passed through the
tokenizer's own normalizer (an uncased model can only ever say "smith", so "Smith" is compared as that).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

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


class SpanWords(NamedTuple):
    """A gold span as its document's words first to stop - 1, with its category, and whether training left one of its
    words unprotected (neither a blacklist term nor inside the blacklist's span there)."""

    first: int
    stop: int
    label: str
    unprotected: bool


@dataclass
class Identifiers:
    """One-word identifiers by key, with their kinds (and categories, when known), and how many n-gram ones
    are left out. With `spans` (gold annotations), an identifier occurs where a span covers it; without, wherever
    its word is written (a blacklist protects every occurrence of its terms)."""

    kinds: dict[str, set[str]]
    ngrams_not_scored: int
    labels: dict[str, set[str]] = field(default_factory=dict)
    unprotected: set[str] | None = None  # keys with an occurrence the training blacklist left unprotected
    spans: dict[str, list[SpanWords]] | None = None  # each document's gold spans, by first word

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
        located: dict[str, list[SpanWords]] = {}
        for doc_id, words in zip(documents["doc_id"], segmenter.pipe(documents["text"])):
            if doc_id not in spans:
                continue
            protected = training.protected_words(words, doc_id)
            for span, first, stop in zip(spans[doc_id], *span_words(words, spans[doc_id])):
                exposed = False
                for i in range(first, stop):
                    key = reader.key(words.terms[i])
                    if key is not None:
                        labels.setdefault(key, set()).add(span.label)
                        if not protected[i]:
                            unprotected.add(key)
                            exposed = True
                located.setdefault(doc_id, []).append(SpanWords(int(first), int(stop), span.label, exposed))
        for doc_spans in located.values():
            doc_spans.sort()
        return cls({key: {DIRECT} for key in labels}, 0, labels, unprotected, located)

    @classmethod
    def from_blacklist(cls, blacklist, reader: WordReader) -> "Identifiers":
        """The blacklist's one-word terms with their kinds and, for direct ones, the NER categories that tagged them."""
        kinds: dict[str, set[str]] = {}
        labels: dict[str, set[str]] = {}
        ngrams = 0
        for term, entry in blacklist.terms.items():
            if entry.n > 1 or " " in term:
                ngrams += 1
                continue
            key = reader.key(term)
            if key is not None:
                kinds.setdefault(key, set()).update((DIRECT, INDIRECT) if entry.kind == BOTH else (entry.kind,))
                if entry.labels:
                    labels.setdefault(key, set()).update(entry.labels)
        return cls(kinds, ngrams, labels)


def never_predicted(total: int, predicted: int, confidence: float) -> dict:
    """Share of `total` identifiers (or occurrences) never predicted, with its Clopper-Pearson interval (exact binomial;
    None when there are none)."""
    if not total:
        return {"score": 1.0, "score_ci": None}
    low, high = binomtest(predicted, total).proportion_ci(confidence, method="exact")
    return {"score": 1.0 - predicted / total, "score_ci": [1.0 - float(high), 1.0 - float(low)]}


def leak_share(keys: set[str], hits: set[str], confidence: float) -> dict:
    """Share of `keys` never predicted, with its Clopper-Pearson interval over the audited identifiers."""
    return {"identifiers": len(keys), "leaked": len(hits), **never_predicted(len(keys), len(hits), confidence)}


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
