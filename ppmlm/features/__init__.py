"""Tokenized features with a `protected` flag per token, chunked on word boundaries.

Subword tokens are tied to words by character offsets (fast tokenizers), not by "##" or "Ġ" heuristics,
so BERT, RoBERTa and any other fast tokenizer give the same protected words.
"""
from __future__ import annotations

from typing import Iterator

import datasets
import numpy as np
from tqdm.auto import tqdm

from ppmlm.errors import PPMLMError
from ppmlm.words import Words, WordSegmenter

FEATURE_COLUMNS = ("input_ids", "attention_mask", "word_ids", "protected")


def build_features(
    corpus,
    blacklist,
    tokenizer,
    max_length: int = 512,
    batch_size: int = 256,
    progress: bool = False,
) -> datasets.Dataset:
    """One row per chunk: `input_ids`, `attention_mask`, `word_ids` (word index within the chunk, -1 for
    special and out-of-word tokens), `protected`, plus `doc_id`, `user_id` and `word_offset` (index of the
    chunk's first word in its document).

    `corpus` is a validated corpus or a list of records with `doc_id`, `user_id` and `text`; `blacklist`
    may be None (nothing protected).
    """
    if not getattr(tokenizer, "is_fast", False):
        raise PPMLMError(f"{type(tokenizer).__name__} is not a fast tokenizer: character offsets are needed")
    prefix, suffix = special_tokens_around(tokenizer)
    budget = max_length - len(prefix) - len(suffix)
    if budget < 1:
        raise ValueError(f"max_length {max_length} leaves no room for text")
    segmenter = blacklist.segmenter if blacklist is not None else WordSegmenter()
    records = corpus if isinstance(corpus, list) else corpus.select_columns(["text", "user_id", "doc_id"]).to_list()
    columns: dict[str, list] = {c: [] for c in (*FEATURE_COLUMNS, "doc_id", "user_id", "word_offset")}
    bar = tqdm(total=len(records), desc="features", disable=not progress)
    for begin in range(0, len(records), batch_size):
        batch = records[begin : begin + batch_size]
        texts = [r["text"] for r in batch]
        encoded = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        for record, words, ids, offsets in zip(batch, segmenter.pipe(texts), encoded["input_ids"], encoded["offset_mapping"]):
            word_protected = (
                blacklist.protected_words(words, record["doc_id"]) if blacklist is not None else np.zeros(len(words), bool)
            )
            token_words, token_protected = align_tokens(words, word_protected, offsets)
            ids = np.asarray(ids)  # once per document, not per chunk: a long note has thousands of chunks
            for chunk in _chunks(token_words, budget):
                _append_chunk(columns, prefix, suffix, ids[chunk], token_words[chunk], token_protected[chunk])
                columns["doc_id"].append(record["doc_id"])
                columns["user_id"].append(record["user_id"])
        bar.update(len(batch))
    bar.close()
    return datasets.Dataset.from_dict(columns)


def align_tokens(words: Words, word_protected: np.ndarray, offsets) -> tuple[np.ndarray, np.ndarray]:
    """Word index of each token (the word its first character falls in, -1 when none) and whether the
    token touches any protected word (a token straddling two words is protected if either is)."""
    offsets = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    starts, ends = words.offsets
    token_start, token_end = offsets[:, 0], offsets[:, 1]
    first = np.searchsorted(ends, token_start, side="right")  # first word ending after the token starts
    last = np.searchsorted(starts, token_end, side="left") - 1  # last word starting before the token ends
    overlaps = (first <= last) & (token_end > token_start)
    token_words = np.where(overlaps, first, -1)
    cumulative = np.concatenate([[0], np.cumsum(word_protected, dtype=np.int64)])
    lo, hi = np.clip(first, 0, len(words)), np.clip(last + 1, 0, len(words))
    token_protected = overlaps & (cumulative[np.maximum(hi, lo)] - cumulative[lo] > 0)
    return token_words, token_protected


def _chunks(token_words: np.ndarray, budget: int) -> Iterator[slice]:
    """Slices of at most `budget` tokens that end on a word boundary (a word longer than the budget is cut)."""
    n = len(token_words)
    if n == 0:
        return
    boundary = np.flatnonzero(np.concatenate([[True], token_words[1:] != token_words[:-1]]))  # group starts
    start = 0
    while n - start > budget:
        limit = start + budget
        cut = boundary[np.searchsorted(boundary, limit, side="right") - 1]  # last group start <= limit
        if cut <= start:
            cut = limit
        yield slice(start, cut)
        start = cut
    yield slice(start, n)


def special_tokens_around(tokenizer) -> tuple[list[int], list[int]]:
    """The special tokens a tokenizer puts before and after one sequence ([CLS] … [SEP], <s> … </s>),
    read from its own output so that any post-processor is respected."""
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    full = tokenizer("a", add_special_tokens=True)["input_ids"]
    for i in range(len(full) - len(plain) + 1):
        if full[i : i + len(plain)] == plain:
            return full[:i], full[i + len(plain) :]
    raise PPMLMError(f"cannot find where {type(tokenizer).__name__} puts its special tokens")


def _append_chunk(columns, prefix, suffix, ids, token_words, token_protected) -> None:
    input_ids = prefix + ids.tolist() + suffix
    special = np.zeros(len(input_ids), dtype=bool)
    special[: len(prefix)] = special[len(input_ids) - len(suffix) :] = True
    in_word = token_words[token_words >= 0]
    first_word = int(in_word.min()) if len(in_word) else 0
    word_ids = np.full(len(input_ids), -1, dtype=np.int64)
    protected = np.zeros(len(input_ids), dtype=bool)
    word_ids[~special] = np.where(token_words >= 0, token_words - first_word, -1)
    protected[~special] = token_protected
    columns["input_ids"].append(input_ids)
    columns["attention_mask"].append([1] * len(input_ids))
    columns["word_ids"].append(word_ids.tolist())
    columns["protected"].append(protected.tolist())
    columns["word_offset"].append(first_word)
