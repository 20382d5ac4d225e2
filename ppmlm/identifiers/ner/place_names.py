"""Town names built like most US ones ("Allenville", "West Adamburgh"), and the direction or institution word that
the rules before this one left off a place or an institution ("South Rebeccaberg General Hospital")."""
from __future__ import annotations

import re
from pathlib import Path

from spacy.language import Language
from spacy.util import filter_spans

from ppmlm.identifiers.labels import HOSPITAL, LOCATION
from ppmlm.identifiers.ner.doc_facts import DocContext, add_entities, doc_text
from ppmlm.identifiers.ner.model_dir import read_lists, read_words


class PlaceNames:
    """LOCATION spans for town names built like most US ones: a person's name and a place suffix
    ("Jacksonville", "Georgetown", "Allenville", "Kevinton"), or a direction or water word before a name
    ("West Adamburgh", "Lake Jessica", "South Micheal"). Capitalised or in capitals; in lower case only in
    lower-case text. Words listed in `common_words` (everyday words that parse this way) never count.

    Then it mends the places and institutions found so far: a prefix, or for an institution one of
    `institution_prefixes`, written the same way right before one is part of its name ("South" + "Rebeccaberg
    General Hospital", "University" + "Hospital of Port Huron"), and a place followed by one of `institution_tails`
    is the institution named after it ("port huron university").
    """

    def __init__(self, model_dir: Path, config: dict):
        self.stems = read_lists(model_dir, config["names"])
        self.common = read_words(model_dir / config["common_words"])
        suffixes = sorted(config["suffixes"], key=len, reverse=True)
        self.suffixes = tuple(suffixes)
        self.prefixes = frozenset(config["prefixes"])
        self.lower_case_prefixes = frozenset(config.get("lower_case_prefixes", ()))
        self.institution_prefixes = frozenset(config.get("institution_prefixes", ()))
        self.institution_tails = frozenset(config.get("institution_tails", ()))
        self._candidate = re.compile(r"(?i)\b[^\W\d_]{2,}(?:" + "|".join(map(re.escape, suffixes)) + r")\b")

    def _is_place_word(self, word: str) -> bool:
        lower = word.lower()
        if lower in self.common or lower in self.stems:
            return False
        return any(lower.endswith(suffix) and lower[: -len(suffix)] in self.stems
                   for suffix in self.suffixes if len(lower) - len(suffix) >= 3)

    def __call__(self, doc):
        text = doc_text(doc)
        lower_text = None
        spans = []
        for match in self._candidate.finditer(text):
            word = match.group()
            if word.islower():
                if lower_text is None:
                    lower_text = DocContext(doc, text).lower_case
                if not lower_text:
                    continue
            if self._is_place_word(word):
                span = doc.char_span(match.start(), match.end(), label=LOCATION, span_id="places:suffix")
                if span is not None:
                    spans.append(span)
        spans += self._prefixed(doc)
        if spans:
            doc.ents = add_entities(doc, filter_spans(spans))
        return self.mend(doc)

    def mend(self, doc):
        if doc.ents:
            doc.ents = self._mended(doc)
        return doc

    def _mended(self, doc) -> list:
        ents = list(doc.ents)
        taken = {i for ent in ents for i in range(ent.start, ent.end)}
        mended = []
        for ent in ents:
            start, end, label = ent.start, ent.end, ent.label_
            if label in (LOCATION, HOSPITAL):
                while start > 0 and start - 1 not in taken and self._name_word(doc[start - 1], doc[start], label):
                    start -= 1
                if end < len(doc) and end not in taken and doc[end].lower_ in self.institution_tails \
                        and _same_case(doc[end - 1], doc[end]):
                    end, label = end + 1, HOSPITAL
            if (start, end) == (ent.start, ent.end):
                mended.append(ent)
            else:
                taken.update(range(start, end))
                mended.append(doc.char_span(doc[start].idx, doc[end - 1].idx + len(doc[end - 1]), label=label,
                                            span_id=ent.ent_id_ or "places:mended"))
        return mended

    def _name_word(self, word, first, label: str) -> bool:
        lower = word.lower_
        return ((lower in self.prefixes or (label == HOSPITAL and lower in self.institution_prefixes))
                and _same_case(word, first))

    def _prefixed(self, doc) -> list:
        """"West Adamburgh": a prefix, then a name or a place word written the same way. In lower case ("home to
        new jenna.") only one of `lower_case_prefixes` right after a preposition of place, and only where no word
        follows: elsewhere "new" and "west" are everyday words, "to st mary's" and "to east ronald nursing and
        rehab" are institutions, left to the institution rules."""
        found = []
        for token in doc[:-1]:
            if token.lower_ in self.prefixes:
                following = doc[token.i + 1]
                if token.is_lower:
                    written_as_place = (token.lower_ in self.lower_case_prefixes and following.is_lower and token.i > 0
                                 and doc[token.i - 1].lower_ in _PLACE_PREPOSITIONS and _ends_phrase(doc, token.i + 2))
                else:
                    written_as_place = following.is_title if token.is_title else following.is_upper
                word = following.lower_
                if written_as_place and word not in self.common and (word in self.stems or self._is_place_word(word)):
                    found.append(doc[token.i : token.i + 2])
        return [doc.char_span(s.start_char, s.end_char, label=LOCATION, span_id="places:prefix") for s in found]


_PLACE_PREPOSITIONS = frozenset({"in", "to", "from", "near"})


def _ends_phrase(doc, i: int) -> bool:
    """No word at token i: the end of the text, punctuation or a line break."""
    return i >= len(doc) or not doc[i].is_alpha  # a line break is a token of its own


def _same_case(word, other) -> bool:
    """Both capitalised, both in capitals or both in lower case: "WEST" belongs to "ADAMBURGH", not to "Adamburgh"."""
    return ((word.is_upper and other.is_upper) or (word.is_title and other.is_title)
            or (word.is_lower and other.is_lower))


@Language.factory("ppmlm_place_names", default_config={"model_dir": "", "config": {}})
def _make_place_names(nlp: Language, name: str, model_dir: str, config: dict) -> PlaceNames:
    return PlaceNames(Path(model_dir), config)


@Language.factory("ppmlm_place_mending", default_config={"model_dir": "", "config": {}})
def _make_place_mending(nlp: Language, name: str, model_dir: str, config: dict):
    """The same mending once more after the context rules: their `not_first` lists strip a leading direction word
    ("at south rebeccaberg general" -> "rebeccaberg general"), and a town they found may precede an institution
    word ("west adamburgh community")."""
    return PlaceNames(Path(model_dir), config).mend
