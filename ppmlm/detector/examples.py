"""What a detector learns from: a corpus's annotated spans as BIO tags on token windows, and users split for early
stopping and for the folds of its evaluation (whole users on one side, never a document of one user on both)."""
from __future__ import annotations

import hashlib
from bisect import bisect_left

import numpy as np

from ppmlm.corpus.split import split_users
from ppmlm.errors import CorpusError
from ppmlm.identifiers.blacklist import gold_spans
from ppmlm.identifiers.ner import DEFAULT_MODEL_DIR, DetectorSettings, Span, read_labels
from ppmlm.identifiers.ner.tagger import windows

IGNORED = -100  # the label of special tokens: no loss


def annotations(corpus, column: str, where: str) -> dict[str, list[Span]]:
    """The annotated spans of each document (a malformed one is named by record and column, never shown)."""
    if column not in corpus.column_names:
        raise CorpusError(f"{where}: no column {column!r} of annotated spans (columns: {', '.join(corpus.column_names)}); "
                          "name yours with --spans-from (a list of {start, end, label} per record)")
    spans = gold_spans(corpus, column)
    if not spans:
        raise CorpusError(f"{where}: column {column!r} holds no span: a detector learns from annotated identifiers")
    return spans


def entity_types(spans: dict[str, list[Span]]) -> list[str]:
    return sorted({span.label for doc_spans in spans.values() for span in doc_spans})


def phi_categories(types: list[str]) -> dict[str, str]:
    """The PHI category of each annotation label: itself when it is one, else the default label map's (it maps i2b2
    and Presidio names: PATIENT, DOCTOR, PHONE_NUMBER...), else the label as annotated."""
    label_map = read_labels(DEFAULT_MODEL_DIR / "labels.json")
    return {name: label_map.get(name) or name for name in types}


def held_out_users(user_ids: list[str], fraction: float, seed: int, where: str) -> tuple[set[str], set[str]]:
    """(training users, held-out users) by the seeded user hash of `split_users`; both sides non-empty."""
    split = split_users(user_ids, seed=seed, audit_fraction=fraction, population_fraction=0.0)
    train, held_out = set(split.members), set(split.audit_non_members)
    if not train or not held_out:
        raise CorpusError(f"{where}: {len(set(user_ids))} users cannot be split into training users and held-out users "
                          f"for early stopping and the threshold (held-out share {fraction}): annotate at least 3 users")
    return train, held_out


def user_folds(user_ids: list[str], folds: int, seed: int, where: str) -> list[list[str]]:
    """`folds` groups of users of (nearly) equal size, dealt in the order of a seeded hash of each id: every user in
    exactly one fold, the same folds on every machine."""
    users = sorted(set(user_ids), key=lambda u: hashlib.blake2b(f"{seed}\x00{u}".encode(), digest_size=8).digest())
    if len(users) < 3 * folds:
        raise CorpusError(f"{where}: {len(users)} users are too few for {folds} folds: each fold's training needs at "
                          f"least 3 users of the other folds (training and held-out users), so at least {3 * folds}")
    return [sorted(users[i::folds]) for i in range(folds)]


def labelled_windows(tokenizer, texts: list[str], spans: list[list[Span]], settings: DetectorSettings) -> list[dict]:
    """The windows the detector reads at inference (`windows`), each token tagged from the annotated span it
    overlaps: B- on the first token of the span's first word, I- on the others, O outside; special tokens ignored."""
    encoded = windows(tokenizer, texts, settings)
    tag = {name: i for i, name in enumerate(settings.tags)}
    owner = encoded["overflow_to_sample_mapping"]
    by_text: dict[int, list[int]] = {}
    for window, text in enumerate(owner):
        by_text.setdefault(text, []).append(window)
    examples: list[dict | None] = [None] * len(owner)
    for text, text_windows in by_text.items():
        doc_spans = _disjoint(spans[text])
        starts = [span.start for span in doc_spans]
        tokens = [(window, _tokens(encoded, window)) for window in text_windows]
        first_word, word_start = _first_words(tokens, doc_spans, starts)
        for window, (word_ids, begin, end) in tokens:
            labels = [IGNORED] * len(encoded["input_ids"][window])
            for position, (word, a, b) in enumerate(zip(word_ids, begin, end)):
                if word < 0:
                    continue
                j = _overlapping(starts, doc_spans, a, b)
                if j is None:
                    labels[position] = tag["O"]
                else:
                    first = word == first_word[j] and a == word_start[word]
                    labels[position] = tag[f"{'B' if first else 'I'}-{doc_spans[j].label}"]
            examples[window] = {"input_ids": encoded["input_ids"][window],
                                "attention_mask": encoded["attention_mask"][window], "labels": labels}
    return examples


def _tokens(encoded, window: int) -> tuple[list[int], list[int], list[int]]:
    word_ids = [-1 if w is None else w for w in encoded.word_ids(window)]
    offsets = encoded["offset_mapping"][window]
    return word_ids, [a for a, _ in offsets], [b for _, b in offsets]


def _disjoint(spans: list[Span]) -> list[Span]:
    """Annotated spans sorted, an overlapping one joined to the one before it (whose label it takes)."""
    out: list[Span] = []
    for span in sorted(spans):
        if out and span.start < out[-1].end:
            out[-1] = Span(out[-1].start, max(out[-1].end, span.end), out[-1].label)
        else:
            out.append(span)
    return out


def _overlapping(starts: list[int], spans: list[Span], a: int, b: int) -> int | None:
    """The span overlapping characters [a, b), if any (spans disjoint and sorted)."""
    j = bisect_left(starts, b) - 1
    return j if j >= 0 and spans[j].end > a and spans[j].start < b else None


def _first_words(tokens, spans: list[Span], starts: list[int]) -> tuple[dict[int, int], dict[int, int]]:
    """The first word each span overlaps, and where each word starts, over all the windows of a text."""
    first_word: dict[int, int] = {}
    word_start: dict[int, int] = {}
    for _, (word_ids, begin, end) in tokens:
        for word, a, b in zip(word_ids, begin, end):
            if word < 0:
                continue
            word_start[word] = min(word_start.get(word, a), a)
            j = _overlapping(starts, spans, a, b)
            if j is not None:
                first_word[j] = min(first_word.get(j, word), word)
    return first_word, word_start


def gold_words(starts: np.ndarray, ends: np.ndarray, spans: list[Span]) -> np.ndarray:
    """Boolean per word (character offsets `starts`, `ends`): overlaps an annotated span."""
    hit = np.zeros(len(starts), dtype=bool)
    for span in spans:
        hit |= (starts < span.end) & (ends > span.start)
    return hit
