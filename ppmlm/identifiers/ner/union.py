"""Several backends as one: `load_ner("default+detector:DIR")` runs the rules and a trained detector over the same
texts and keeps every character either of them tags.

The first backend's spans stay as they are (the rules know their categories and trim titles); a later backend adds
what lies outside them: each of its spans less the characters already tagged, trimmed to word characters. A span
records which backends found it (`Span.source`): "default" alone, "detector" alone, or "default+detector" for a
span of the first that the second tagged too, wholly or in part. The blacklist counts spans per source in its
stats.json.
"""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import replace
from typing import Iterable, Iterator

from ppmlm.identifiers.ner.registry import NERBackend, Span, register_union
from ppmlm.identifiers.ner.spacy_backend import spans_in_workers
from ppmlm.identifiers.profiles import DEFAULT_PROFILE

_WORDS = re.compile(r"\w(?:.*\w)?", re.DOTALL)  # from the first word character to the last


class UnionNER:
    texts_per_task = 256  # texts a worker process gets at a time with n_process > 1

    def __init__(self, parts: list[NERBackend]):
        self.parts = parts
        short = [part.name.partition(":")[0] for part in parts]
        self.sources = short if len(set(short)) == len(short) else [part.name for part in parts]
        self.name = "+".join(part.name for part in parts)
        specs = [getattr(part, "spec", None) for part in parts]
        self.spec = None if None in specs else (
            "+".join(spec for spec, _ in specs),
            next((profile for _, profile in specs if profile != DEFAULT_PROFILE), DEFAULT_PROFILE))

    def spans(self, texts: Iterable[str], *, batch_size: int = 64, n_process: int = 1) -> Iterator[list[Span]]:
        """One list per text: the union of the parts' spans, sorted and non-overlapping, each with its source. With
        `n_process` > 1 each worker process runs every part on its share of the texts."""
        if n_process > 1 and self.spec is not None:
            yield from spans_in_workers(self.spec, texts, batch_size, n_process, self.texts_per_task)
            return
        texts = list(texts)
        found = [part.spans(texts, batch_size=batch_size) for part in self.parts]
        for text, *spans in zip(texts, *found):
            yield union_spans(text, spans, self.sources)


def union_spans(text: str, found: list[list[Span]], sources: list[str]) -> list[Span]:
    """The spans of several backends over one text (`found`, one sorted non-overlapping list per backend, named by
    `sources`) as one sorted non-overlapping list: see the module's docstring."""
    kept = list(found[0])
    found_by = [[sources[0]] for _ in kept]
    for spans, source in zip(found[1:], sources[1:]):
        starts, ends = [span.start for span in kept], [span.end for span in kept]
        added = []
        for span in spans:
            cursor = span.start
            for i in range(bisect_right(ends, span.start), bisect_left(starts, span.end)):
                if source not in found_by[i]:
                    found_by[i].append(source)
                added += _piece(text, cursor, kept[i].start, span.label, source)
                cursor = max(cursor, kept[i].end)
            added += _piece(text, cursor, span.end, span.label, source)
        everything, found_by = kept + added, found_by + [[source] for _ in added]
        order = sorted(range(len(everything)), key=lambda i: everything[i].start)
        kept, found_by = [everything[i] for i in order], [found_by[i] for i in order]
    return [replace(span, source="+".join(by)) for span, by in zip(kept, found_by)]


def _piece(text: str, start: int, end: int, label: str, source: str) -> list[Span]:
    """The span of characters [start, end) trimmed to word characters, or none if it holds none."""
    if start >= end:
        return []
    match = _WORDS.search(text, start, end)
    return [Span(match.start(), match.end(), label, source)] if match else []


register_union(UnionNER)
