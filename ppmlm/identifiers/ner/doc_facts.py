"""Facts about a document and its words that several rule components and the filters share."""
from __future__ import annotations

import re
from functools import cached_property

import numpy as np
from spacy.attrs import IS_LOWER, ORTH

INITIAL = re.compile(r"^[A-Z]\.?$")
WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
_UPPER = re.compile(r"[A-Z]")
_TEXT = "ppmlm_text"  # doc.user_data key of the joined text


def doc_text(doc) -> str:
    """`doc.text`, joined once per document: spaCy joins the tokens again at every read (0.13 s per MB), and
    each of a dozen rule components reads it."""
    text = doc.user_data.get(_TEXT)
    if text is None:
        text = doc.user_data[_TEXT] = doc.text
    return text


class DocContext:
    """Per-document facts some filters need, computed at most once per document."""

    def __init__(self, doc, text: str):
        self.doc = doc
        self.text = text

    @cached_property
    def lower_case(self) -> bool:
        """A lower-cased text (under 0.2% capitals; English prose has about 3%): capitalisation is no cue."""
        return len(_UPPER.findall(self.text)) < 0.002 * len(self.text)

    @cached_property
    def lower_words(self) -> frozenset[int]:
        """Words written in lower case somewhere in the text, as string ids: `token.lower in lower_words`."""
        words = self.doc.to_array([ORTH, IS_LOWER])
        return frozenset(words[words[:, 1] == 1, 0].tolist())


GAZETTEER = "gazetteer:"  # the entity id prefix of the spans a gazetteer set ("gazetteer:places.txt")


def add_entities(doc, spans, widen: bool = False) -> list:
    """`doc.ents` with `spans` added where they overlap no entity already set: an earlier component wins. With
    `widen`, a span that holds earlier entities whole and more words besides replaces them when they are
    gazetteer entities or of its own label: a context rule read the longer name ("Called Beth Israel ED": the
    institution, not the place "Israel") or the longer identifier of the same kind ("lap chole in 96, '97": both
    years, not the second)."""
    if not doc.ents:
        return list(spans)
    owner = np.full(len(doc) + 1, -1, dtype=np.int64)
    ents = list(doc.ents)
    for i, ent in enumerate(ents):
        owner[ent.start:ent.end] = i
    added, dropped = [], set()
    for span in spans:
        held = {int(i) for i in owner[span.start:span.end] if i >= 0}
        if not held:
            added.append(span)
        elif widen and all(_widens(span, ents[i]) for i in held):
            dropped |= held
            added.append(span)
    return [*(ent for i, ent in enumerate(ents) if i not in dropped), *added]


def _widens(span, ent) -> bool:
    return ((ent.ent_id_.startswith(GAZETTEER) or ent.label_ == span.label_)
            and span.start <= ent.start and ent.end <= span.end and span.end - span.start > ent.end - ent.start)


def sentence_start(doc, i: int) -> bool:
    """Token i starts a sentence, a line or a list item: its capital says nothing."""
    if i == 0:
        return True
    previous = doc[i - 1]
    breaks = (".", "!", "?", ":", ";", "-", "*", "•", ")")
    return previous.is_space or previous.text in breaks or "\n" in previous.whitespace_
