"""The one definition of a word, shared by every stage.

The graph pass, NER spans, the collator's alignment and the audit must agree on what a word is, or a
protected word in one stage becomes an unprotected fragment in another. A word is a non-whitespace token
of spaCy's tokenizer; a *term* is a word's normalized text (Unicode NFKC, optional case folding) or an
n-gram of consecutive term words joined by one space. Words without a letter or digit (punctuation,
symbols) are never terms and n-grams skip them, so "(555) 123-4567" is the 3-gram "555 123 4567"
wherever it occurs.
"""
from __future__ import annotations

import unicodedata
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Iterable, Iterator

import numpy as np
import spacy


@dataclass(frozen=True)
class Words:
    """Words of one text: character offsets and the term of each word (None when it is not a term)."""

    starts: list[int]
    ends: list[int]
    terms: list[str | None]

    def __len__(self) -> int:
        return len(self.starts)

    @cached_property
    def offsets(self) -> tuple[np.ndarray, np.ndarray]:
        """`starts` and `ends` as arrays, made once per text: a long note has tens of thousands of spans, and
        making them again for each was the square of its length."""
        return np.asarray(self.starts, dtype=np.int64), np.asarray(self.ends, dtype=np.int64)

    def overlapping(self, starts: Iterable[int], ends: Iterable[int]) -> tuple[np.ndarray, np.ndarray]:
        """For each character range [starts[i], ends[i]), the words that overlap it (a word the range cuts counts):
        words first[i] to stop[i] - 1. Words are in text order and disjoint, so this is two binary searches per range."""
        word_starts, word_ends = self.offsets
        starts, ends = np.fromiter(starts, dtype=np.int64), np.fromiter(ends, dtype=np.int64)
        first = np.searchsorted(word_ends, starts, side="right")  # the first word ending after the range starts
        stop = np.searchsorted(word_starts, ends, side="left")  # the words starting before the range ends
        return first, np.maximum(stop, first)

    @property
    def term_positions(self) -> list[int]:
        """Indices of the words that are terms; n-grams are runs of n of them, across punctuation."""
        return [i for i, term in enumerate(self.terms) if term is not None]

    def ngrams(self, n: int) -> Iterator[tuple[int, str]]:
        """(position in `term_positions`, term) for every n consecutive term words."""
        terms = [t for t in self.terms if t is not None]
        if n == 1:
            yield from enumerate(terms)
            return
        for p in range(len(terms) - n + 1):
            yield p, " ".join(terms[p : p + n])


@lru_cache(maxsize=4)
def _blank(lang: str):
    return spacy.blank(lang)


class WordSegmenter:
    """Splits text into words and terms with spaCy's rule-based tokenizer (no statistical model)."""

    def __init__(self, lang: str = "en", casefold: bool = False):
        self.lang = lang
        self.casefold = casefold
        self._tokenizer = _blank(lang).tokenizer
        self.stop_words = _blank(lang).Defaults.stop_words
        self._terms: dict[int, str | None] = {}  # spaCy orth id -> term: each distinct string normalized once
        self._remembered: dict[str, Words | None] | None = None  # see `remembering`

    def normalize(self, text: str) -> str | None:
        """The term for a word's text, or None when the word has no letter or digit."""
        if not text.isascii():
            text = unicodedata.normalize("NFKC", text)
        if not any(c.isalnum() for c in text):
            return None
        return text.casefold() if self.casefold else text

    def term_of(self, text: str) -> str | None:
        """The term of a multi-word string (e.g. an NER span): its term words joined by one space."""
        terms = [t for t in self(text).terms if t is not None]
        return " ".join(terms) if terms else None

    def _words(self, doc) -> Words:
        starts, ends, terms = [], [], []
        cache = self._terms
        for token in doc:
            if token.is_space:
                continue
            start = token.idx
            starts.append(start)
            ends.append(start + len(token))
            orth = token.orth
            term = cache.get(orth, 0)
            if term == 0:
                term = cache[orth] = self.normalize(token.text)
            terms.append(term)
        return Words(starts, ends, terms)

    def __call__(self, text: str) -> Words:
        remembered = self._remembered
        if remembered is None or text not in remembered:
            return self._words(self._tokenizer(text))
        words = remembered[text]
        if words is None:
            words = remembered[text] = self._words(self._tokenizer(text))
        return words

    @contextmanager
    def remembering(self, texts: Iterable[str]):
        """Within the block, each of `texts` is segmented once and its words served again to every later reader
        (the stages that prepare an audit read the audited notes four or five times); other texts are segmented as
        usual and not kept, so memory is bounded by `texts`. A block inside another remembers both blocks' texts,
        and the outer block keeps what the inner one segmented of its own."""
        outer = self._remembered
        self._remembered = remembered = dict.fromkeys(texts) | (outer or {})
        try:
            yield self
        finally:
            if outer is not None:
                outer.update((text, remembered[text]) for text in outer)
            self._remembered = outer

    def memory_zone(self):
        """spaCy's memory zone of the tokenizer (spaCy >= 3.8): the strings and lexemes added while segmenting
        inside it are freed at its end, so memory stays flat over millions of documents. `Words` hold plain
        Python values and outlive the zone."""
        return _blank(self.lang).memory_zone()

    def pipe(self, texts: Iterable[str], batch_size: int = 1000) -> Iterator[Words]:
        if self._remembered is not None:
            yield from map(self, texts)
            return
        for doc in self._tokenizer.pipe(texts, batch_size=batch_size):
            yield self._words(doc)
