"""The name gazetteer: first and last names of a list, with the ambiguity rule and whole names."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

import numpy as np
from spacy.attrs import LOWER
from spacy.language import Language

from ppmlm.identifiers.labels import NAME
from ppmlm.identifiers.ner.doc_facts import GAZETTEER, INITIAL, WORD, DocContext, add_entities, doc_text, sentence_start
from ppmlm.identifiers.ner.filters import EnglishForms
from ppmlm.identifiers.ner.model_dir import read_lists, read_words


class NameGazetteer:
    """NAME spans for the first and last names of a gazetteer, with the ambiguity rule.

    A name that is also a common English or clinical word (`common_words`: "May", "Hope", "Ward",
    "Walker") counts only with context: a name beside it ("Bill Smith"), a name context before it ("wife",
    "dr"), a credential after it ("RN"), or a capital inside mixed-case text away from a sentence start (not
    for `always_capitalised` words: "in May"). The `weak_context_before` words ("w/", "per", "called") precede
    names and everyday words alike: they vouch for a common word only capitalised ("called Crystal", not "w/ good
    effect", "W/ SMALL BOWEL"). Other names count capitalised, in
    capitals, and in lower case in lower-case text or with context (`lower_case: "anywhere"` accepts them
    everywhere). Names listed in `stoplist` or followed by an eponym noun ("Murphy sign") never count.

    With `extend_names`, a name found grows over the unlisted part of the full name: an initial and the word
    after it ("Margaret S. Stouffer", "leidy t muris"), or a word beside it written the same way
    ("Stephan Fenstermacher", "MARTA PALERMO") that is no English word (`english_words`; in capitals and
    lower case also no `dictionary_words`, whose proper nouns a capital cannot tell from common ones); and two
    words around an initial are a name when at least one is unlisted ("MOHMAD R. VIZIROV", "Ken N. Fukuda").
    Without it, the gazetteer's "Margaret" hid the whole name from the statistical NER, which then never
    tagged "S. Stouffer".
    """

    def __init__(self, nlp: Language, model_dir: Path, config: dict, eponym_nouns: Iterable[str] = ()):
        strings = nlp.vocab.strings
        names = read_lists(model_dir, config["names"])
        self._name_ids = np.array(sorted(strings.add(name) for name in names), dtype=np.uint64)
        excluded = read_words(model_dir / config["stoplist"]) if config.get("stoplist") else frozenset()
        self.excluded = excluded | frozenset(eponym_nouns)
        self.common = read_words(model_dir / config["common_words"])
        self.context_before = frozenset(config.get("context_before", ()))
        self.weak_context_before = frozenset(config.get("weak_context_before", ()))
        self.context_after = frozenset(config.get("context_after", ()))
        self.eponym_nouns = frozenset(eponym_nouns)
        self.lower_case = config.get("lower_case", "context")
        self.ambiguous_alone = config.get("ambiguous_alone", False)
        self.always_capitalised = frozenset(config.get("always_capitalised", ()))
        self.label_after = {word: label for file_name, label in config.get("label_after", {}).items()
                            for word in read_words(model_dir / file_name)}
        self.extend_names = config.get("extend_names", False)
        self.english = read_lists(model_dir, config.get("english_words", ())) | self.common | excluded
        self.dictionary = self.english | read_lists(model_dir, config.get("dictionary_words", ()))
        self.forms = EnglishForms(nlp.get_pipe("lemmatizer")) if "lemmatizer" in nlp.component_names else None

    def __call__(self, doc):
        if not len(doc):
            return doc
        lowers = doc.to_array(LOWER)
        at = np.minimum(np.searchsorted(self._name_ids, lowers), len(self._name_ids) - 1)
        found = np.flatnonzero(self._name_ids[at] == lowers)  # a sorted lookup: np.isin sorts the list every call
        initials = self._initial_names(doc, set(found.tolist())) if self.extend_names else []
        if not len(found) and not initials:
            return doc
        context = DocContext(doc, doc_text(doc))
        candidates = {int(i): doc[int(i)] for i in found if doc[int(i)].lower_ not in self.excluded}
        accepted = {i for i, token in candidates.items() if self._alone(doc, i, token, context)}
        for i, token in candidates.items():  # beside an accepted name, written the same way ("Bill Smith")
            if i not in accepted and len(token) > 1 and not self._stop_word_inside(doc, i) and (
                    self._same_shape(token, doc, i - 1, accepted) or self._same_shape(token, doc, i + 1, accepted)):
                accepted.add(i)
        spans = []
        for i in sorted(accepted):
            if spans and spans[-1][1] == i:
                spans[-1][1] = i + 1
            else:
                start = i - 1 if i and INITIAL.match(doc[i - 1].text) else i
                spans.append([start, i + 1])  # with an initial before it: "J Smith", "C. Day"
        if self.extend_names:
            grown = []
            for start, end in sorted([self._whole_name(doc, start, end) for start, end in spans] + initials):
                if grown and start <= grown[-1][1]:  # grown into the next name: one span
                    grown[-1][1] = max(grown[-1][1], end)
                else:
                    grown.append([start, end])
            for span in grown:  # a listed forename that is also a word, before a name grown over an unlisted word
                while span[0] and self._forename_before(doc, span[0], candidates):  # ("filed by Ram Naresh Yadav")
                    span[0] -= 1
            spans = grown
        doc.ents = add_entities(doc, [self._span(doc, start, end) for start, end in spans])
        return doc

    def _initial_names(self, doc, listed: set[int]) -> list[list[int]]:
        """Spans of a name around an initial written alike, at least one of the two words unlisted and the other
        listed or unlisted too: "MOHMAD R. VIZIROV", "Ken N. Fukuda" (Q and X without a period: "Q 4", "X 2")."""
        spans = []
        for i in range(1, len(doc) - 1):
            if not INITIAL.match(doc[i].text) or doc[i].text in ("Q", "X"):
                continue
            before, after = doc[i - 1], doc[i + 1]
            unlisted = [self._unlisted(before, after), self._unlisted(after, before)]
            alike = (before.is_title and after.is_title) or (before.is_upper and after.is_upper)
            if alike and any(unlisted) and all(u or j in listed for u, j in zip(unlisted, (i - 1, i + 1))):
                spans.append([i - 1, i + 2])
        return spans

    def _whole_name(self, doc, start: int, end: int) -> list[int]:
        """The span grown over an initial and an unlisted surname after it, or an unlisted word after it (before
    it too in mixed case: in capitals a verb before a name, "SAYS JANA", is no English word's form we know)."""
        shape = doc[end - 1]
        after = doc[end:end + 2]
        if len(after) == 2 and re.fullmatch(r"[A-Za-z]\.?", after[0].text) and self._unlisted(after[1], shape, initial=True):
            end += 2
        elif len(after) and self._unlisted(after[0], shape):
            end += 1
        if start and doc[start].is_title and not INITIAL.match(doc[start].text) and self._unlisted(doc[start - 1], doc[start]) \
                and not (start > 1 and self._unlisted(doc[start - 2], doc[start])):
            start -= 1
        return [start, end]

    def _forename_before(self, doc, start: int, candidates: dict) -> bool:
        """A listed name written like the name that starts at `start`, just before it, that is no month or weekday and
        no stop word: a common word only the grown name beside it vouches for ("Ram" of "Ram Naresh Yadav")."""
        token = doc[start - 1]
        return start - 1 in candidates and not token.is_stop and token.lower_ not in self.always_capitalised and (
            (token.is_title and doc[start].is_title) or (token.is_upper and doc[start].is_upper))

    def _unlisted(self, token, shape, initial: bool = False) -> bool:
        """A word that can only be part of the name beside it: written like it, a word of letters, no English
        word, no name context, no street or company word; lower case only after an initial ("leidy t muris")."""
        if len(token) < 2 or not WORD.fullmatch(token.text) or any(c.isdigit() for c in token.text):
            return False
        same = (token.is_title and shape.is_title) or (token.is_upper and shape.is_upper) or (
            token.is_lower and shape.is_lower and initial)
        lower = token.lower_
        words = self.english if token.is_title else self.dictionary
        if not same or token.is_stop or lower in words or (self.forms and self.forms.inflects(lower, words)):
            return False
        return lower not in self.context_before and lower not in self.context_after and lower not in self.label_after \
            and lower not in self.eponym_nouns

    def _span(self, doc, start: int, end: int):
        """A NAME span, or with the word after it a street or a company ("Smith Garden", "Smith Group")."""
        after = doc[end] if end < len(doc) else None
        label = self.label_after.get(after.lower_) if after is not None and not after.is_lower else None
        if label is not None:
            return doc.char_span(doc[start].idx, after.idx + len(after), label=label, span_id=f"{GAZETTEER}names")
        return doc.char_span(doc[start].idx, doc[end - 1].idx + len(doc[end - 1]), label=NAME, span_id=f"{GAZETTEER}names")

    def _alone(self, doc, i: int, token, context_of_doc: "DocContext") -> bool:
        """Whether the token is a name on its own evidence (without a name beside it)."""
        if i + 1 < len(doc) and doc[i + 1].lower_ in self.eponym_nouns:
            return False
        ambiguous = token.lower_ in self.common or len(token) < 3
        context = self._context(doc, i, weak_vouches=not ambiguous or token.is_title)
        if token.is_title:
            if context or (not sentence_start(doc, i) and not doc[i + 1:i + 2].text.istitle()
                           and token.lower_ not in self.always_capitalised):
                return True  # "seen by Bill", "wife Hope": capitalised inside a sentence or in a name context
            if len(token) < 3 and token.lower_ not in self.common and i + 1 < len(doc) and self._unlisted(doc[i + 1], token):
                return True  # "Om Parkash", "Jo Kowalczyk": a short name before a surname no list holds
            return not ambiguous or self.ambiguous_alone
        if token.is_upper:
            return context or not ambiguous or (self.ambiguous_alone and len(token) > 2)
        if token.is_lower:
            return context or (not ambiguous and (self.lower_case == "anywhere" or context_of_doc.lower_case))
        return False

    def _context(self, doc, i: int, weak_vouches: bool) -> bool:
        before = doc[i - 1].lower_ if i else ""
        if before in (",", ":") and i > 1:
            before = doc[i - 2].lower_
        elif before == "." and i > 1:
            before = doc[i - 2].lower_ + "."  # a title the tokenizer split from its dot: "Drs ." is "drs."
        after = doc[i + 1].lower_ if i + 1 < len(doc) else ""
        if after == "," and i + 2 < len(doc):
            after = doc[i + 2].lower_
        if not weak_vouches and before in self.weak_context_before:
            before = ""
        return before in self.context_before or after in self.context_after

    @staticmethod
    def _stop_word_inside(doc, i: int) -> bool:
        """A listed stop word ("may", "and", "more") in lower case or capitals with a word after it: a verb or a link
        ("son bob may visit", "JEN AND BOB"), not the surname that ends a name ("NIHARIKA MORE" before a line's end)."""
        token = doc[i]
        return token.is_stop and not token.is_title and i + 1 < len(doc) and not (
            doc[i + 1].is_punct or (doc[i + 1].is_space and "\n" in doc[i + 1].text))

    @staticmethod
    def _same_shape(token, doc, j: int, accepted: set[int]) -> bool:
        if j not in accepted:
            return False
        other = doc[j]
        return (token.is_title and other.is_title) or (token.is_upper and other.is_upper) or (token.is_lower and other.is_lower)


@Language.factory("ppmlm_name_gazetteer", default_config={"model_dir": "", "config": {}, "eponym_nouns": []})
def _make_name_gazetteer(nlp: Language, name: str, model_dir: str, config: dict, eponym_nouns: list) -> NameGazetteer:
    return NameGazetteer(nlp, Path(model_dir), config, eponym_nouns)
