"""Direct spans per document, held in flat arrays.

A corpus of a million notes has some fifteen million direct spans. As lists of `Span` objects they cost about
170 bytes each (2.5 GB), in the build's main process and again in every run that loads the blacklist; here a
span is 12 bytes (start, end, label code, source code) and a document one dictionary entry. Read, it is the mapping
doc_id -> list of Spans the rest of ppmlm always used (Spans are made on access).
"""
from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping

from ppmlm.identifiers.ner import Span


class SpanTable(Mapping):
    """doc_id -> list[Span], appended to by document (`add`, `update`) and read as a Mapping. A document's spans
    keep the order they were added in; adding to a document again replaces its spans, as a dict would."""

    def __init__(self, spans: Mapping[str, Iterable[Span]] | None = None):
        self._row: dict[str, int] = {}  # doc_id -> its row in `_first`, `_count`
        self._first, self._count = array("q"), array("i")
        self._starts, self._ends, self._labels, self._sources = array("i"), array("i"), array("H"), array("H")
        self._label_names: list[str] = []
        self._label_code: dict[str, int] = {}
        self._source_names: list[str | None] = [None]  # code 0: no source (a backend that is no union)
        self._source_code: dict[str | None, int] = {None: 0}
        if spans:
            self.update(spans)

    def add(self, doc_id: str, spans: Iterable[Span]) -> None:
        spans = list(spans)
        row = self._row.get(doc_id)
        if row is None:
            self._row[doc_id] = len(self._first)
            self._first.append(len(self._starts))
            self._count.append(len(spans))
        else:  # the old spans stay in the arrays, unreferenced: replacing is rare (a file's document split in two)
            self._first[row], self._count[row] = len(self._starts), len(spans)
        for span in spans:
            self._push(span)

    def append(self, doc_id: str, span: Span) -> None:
        """One more span for `doc_id`, after those it has (read in a file's order: a document's lines together)."""
        row = self._row.get(doc_id)
        if row is None or self._first[row] + self._count[row] != len(self._starts):  # new, or not the last one added
            self.add(doc_id, [*self.get(doc_id, ()), span])
            return
        self._count[row] += 1
        self._push(span)

    def _push(self, span: Span) -> None:
        self._starts.append(span.start)
        self._ends.append(span.end)
        self._labels.append(self._code(span.label))
        source = self._source_code.get(span.source)
        if source is None:
            source = self._source_code[span.source] = len(self._source_names)
            self._source_names.append(span.source)
        self._sources.append(source)

    def update(self, spans: Mapping[str, Iterable[Span]]) -> None:
        for doc_id, doc_spans in spans.items():
            self.add(doc_id, doc_spans)

    def _code(self, label: str) -> int:
        code = self._label_code.get(label)
        if code is None:
            code = self._label_code[label] = len(self._label_names)
            self._label_names.append(label)
        return code

    def __getitem__(self, doc_id: str) -> list[Span]:
        row = self._row[doc_id]
        first, count, names, sources = self._first[row], self._count[row], self._label_names, self._source_names
        return [Span(self._starts[i], self._ends[i], names[self._labels[i]], sources[self._sources[i]])
                for i in range(first, first + count)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._row)

    def __len__(self) -> int:
        return len(self._row)

    def __contains__(self, doc_id) -> bool:
        return doc_id in self._row
