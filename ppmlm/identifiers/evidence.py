"""Corpus evidence: identifiers that one document's NER cannot see but the corpus shows.

NER judges each document alone, so "CMC" tagged after "transferred from" in one note stays unprotected
in the fifty notes that write "CMC CARDIOLOGY", and a relative's name shared by two patients is neither
tagged nor an indirect identifier (k=2). At blacklist-build time the whole corpus is known, and two rules
use it (settings: `corpus_evidence` in the NER model's pipeline.json, per profile):

- recurrence: a capitalised or all-capital word that NER tags inside a name, place or institution span
  in at least `min_tagged_share` of its occurrences is protected wherever it recurs, in every casing the
  corpus writes it capitalised or in capitals ("CMC", "Cmc"; in lower case, "cmc", only an acronym of
  up to MAX_ACRONYM letters or a gazetteer name), unless it is a common word or an initial;
- few users: a word the user-term graph shows in the notes of at most `few_users` users (but at least k,
  else it is an indirect identifier already), written capitalised or in capitals, not a common word and
  (with `needs_gazetteer`) listed in a name or place gazetteer, is protected.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ppmlm.identifiers.graph import UserTermGraph
from ppmlm.identifiers.labels import HOSPITAL, LOCATION, NAME
from ppmlm.identifiers.ner import DEFAULT_MODEL_DIR, Span, pipeline_config, read_lists, split_spec
from ppmlm.words import Words

EVIDENCE_LABELS = (NAME, LOCATION, HOSPITAL)  # categories whose words can recur on their own
RECURRENCE, FEW_USERS = "corpus:recurrence", "corpus:few_users"  # labels of the terms each rule adds
MAX_ACRONYM = 4  # an all-capital word this short is an acronym: checked against common words, not the dictionary


@dataclass(frozen=True)
class EvidenceSettings:
    min_tagged_share: float
    few_users: int
    needs_gazetteer: bool
    common_words: frozenset[str]
    dictionary_words: frozenset[str]  # WordNet: many short acronyms are in it ("mho"), so longer words only
    gazetteer: frozenset[str]

    @classmethod
    def for_ner(cls, ner: str, profile: str) -> "EvidenceSettings | None":
        """The settings of the NER model directory behind `ner` ("default:DIR" reads DIR, alone or in a union such as
        "default:DIR+detector:D"; any other backend our default directory), or None when that pipeline.json has no
        `corpus_evidence`."""
        given = [arg for name, _, arg in (part.partition(":") for part in split_spec(ner)) if name == "default" and arg]
        model_dir = Path(given[0]) if given else DEFAULT_MODEL_DIR
        config = pipeline_config(model_dir, profile).get("corpus_evidence")
        if not config:
            return None
        return cls(config["min_tagged_share"], config["few_users"], config["needs_gazetteer"],
                   read_lists(model_dir, config["common_words"]), read_lists(model_dir, config["dictionary_words"]),
                   read_lists(model_dir, config["gazetteers"]))

    def candidate(self, word: str, casefold: bool = False) -> bool:
        """Capitalised or in capitals (any casing when terms are case-folded), not an initial ("C."), and
        not a common word ("CITING", "Remedies"; an acronym is checked against fewer words)."""
        shaped = word.istitle() or word.isupper() or (casefold and word.isalpha())
        lower = word.lower()
        return (shaped and len(word.rstrip(".")) > 1 and lower not in self.common_words
                and (acronym(word) or not self.in_dictionary(lower)))

    def in_dictionary(self, lower: str) -> bool:
        """The word or its stem is a dictionary word: "citing" (cite), "remedies" (remedy), "worked"."""
        stems = [lower] + [lower[: -len(end)] + add for end, adds in _INFLECTIONS if lower.endswith(end) for add in adds]
        return any(stem in self.dictionary_words for stem in stems)


_INFLECTIONS = (("ies", ("y",)), ("es", ("", "e")), ("s", ("",)), ("ing", ("", "e")), ("ed", ("", "e")), ("ly", ("",)))


def acronym(word: str) -> bool:
    return word.isupper() and word.isalpha() and len(word) <= MAX_ACRONYM


def words_tagged(words: Words, spans: list[Span]) -> list[str]:
    """The term words of a document inside its spans of EVIDENCE_LABELS, one entry per occurrence."""
    spans = [span for span in spans if span.label in EVIDENCE_LABELS]
    first, stop = words.overlapping((span.start for span in spans), (span.end for span in spans))
    return [term for a, b in zip(first.tolist(), stop.tolist()) for term in words.terms[a:b] if term is not None]


def evidence_terms(graph: UserTermGraph, tagged: Counter, k: int, settings: EvidenceSettings,
                   casefold: bool = False) -> dict[str, str]:
    """Term -> the rule that protects it. `tagged` counts, per word, its occurrences inside NER spans of
    EVIDENCE_LABELS (`words_tagged`, summed over the corpus)."""
    index = {term: j for j, term in enumerate(graph.terms)}
    found: dict[str, str] = {}
    variants: dict[str, list[str]] = {}
    for term, j in index.items():
        if graph.term_n[j] == 1:
            variants.setdefault(term.lower(), []).append(term)
    for word, count in tagged.items():
        j = index.get(word)
        if j is None or not settings.candidate(word, casefold) or count < settings.min_tagged_share * graph.occurrences[j]:
            continue
        for variant in variants.get(word.lower(), ()):
            if settings.candidate(variant, casefold) or acronym(word) or word.lower() in settings.gazetteer:
                found[variant] = RECURRENCE  # "CMC" also as "Cmc"; in lower case an acronym ("cmc") or a name
    few = np.flatnonzero((graph.degree >= k) & (graph.degree <= settings.few_users) & (graph.term_n == 1))
    for j in few:
        word = graph.terms[j]
        listed = not settings.needs_gazetteer or word.lower() in settings.gazetteer
        if word not in found and listed and settings.candidate(word, casefold):
            found[word] = FEW_USERS
    return found
