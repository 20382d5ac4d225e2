"""A trained token classifier as an NER backend: `detector:DIR` (the directory `ppmlm detector train` writes).

Texts are cut into windows of `max_length` tokens, each sharing `stride` tokens with the one before it, so a
note of any length is read whole and every token sees some context on both sides. A word (the tokenizer's
pre-tokenized word) scores the highest P(not O) any of its tokens gets in any window, and takes that token's
entity type (the type with most probability there, B and I together). A word whose score reaches the
detector's threshold is an identifier; consecutive identifier words of one type form a span, unless the later
one begins a new entity (its first token more likely B than I). The threshold was chosen on held-out users for
recall (ppmlm/detector/training.py): a word the model is unsure of is protected.
"""
from __future__ import annotations

import multiprocessing
from dataclasses import dataclass
from typing import Iterable, Iterator

import numpy as np
import torch
import transformers

from ppmlm.identifiers.ner.detector_dir import DetectorSettings
from ppmlm.identifiers.ner.registry import NERError, Span
from ppmlm.identifiers.ner.spacy_backend import spans_in_workers
from ppmlm.identifiers.profiles import DEFAULT_PROFILE
from ppmlm.processes import freed_memory_kept

WINDOWS_PER_BATCH = 32  # windows through the model at once


@dataclass
class WordScores:
    """A text's words (character offsets), the score of each (highest P(not O) of its tokens), the entity type of
    that token (index into the detector's types), and whether the word's first token is more likely B than I."""

    starts: np.ndarray
    ends: np.ndarray
    scores: np.ndarray
    types: np.ndarray
    begins: np.ndarray


class Tagger:
    """A token classifier and its settings; `spans` as every NER backend, `word_scores` for the threshold."""

    name = "detector"
    texts_per_task = 256  # texts a worker process gets at a time with n_process > 1

    def __init__(self, model, tokenizer, settings: DetectorSettings, spec: tuple[str, str] | None = None):
        if not getattr(tokenizer, "is_fast", False):
            raise NERError("a detector needs a fast tokenizer (character offsets of its tokens)")
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.settings = settings
        self.spec = spec  # (spec, profile) that load_ner builds this backend from, in a worker process
        self.device = next(model.parameters()).device

    @classmethod
    def load(cls, directory) -> "Tagger":
        """The detector of a directory, on the GPU when there is one. In a worker process it computes on one thread:
        its siblings have the other cores."""
        settings = DetectorSettings.load(directory)
        if multiprocessing.parent_process() is not None:
            torch.set_num_threads(1)
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(str(directory))
            model = transformers.AutoModelForTokenClassification.from_pretrained(str(directory))
        except (OSError, ValueError) as error:
            raise NERError(f"detector:{directory}: cannot load its model ({error})") from None
        if model.config.num_labels != len(settings.tags):
            raise NERError(f"detector:{directory}: the model has {model.config.num_labels} tags, its settings "
                           f"{len(settings.tags)}")
        model.to("cuda" if torch.cuda.is_available() else "cpu")
        return cls(model, tokenizer, settings, spec=(f"detector:{directory}", DEFAULT_PROFILE))

    def spans(self, texts: Iterable[str], *, batch_size: int = 64, n_process: int = 1) -> Iterator[list[Span]]:
        """One list of spans per text, labelled with the PHI category of their entity type. The memory the model's
        layers free is kept for the next batch (`freed_memory_kept`: about an eighth less CPU here)."""
        if n_process > 1 and self.spec is not None:
            yield from spans_in_workers(self.spec, texts, batch_size, n_process, self.texts_per_task)
            return
        with freed_memory_kept():
            for text, words in zip_texts(texts, self.word_scores, batch_size):
                yield decode(words, self.settings, text)

    def word_scores(self, texts: list[str]) -> list[WordScores]:
        """The words of each text with their scores (see the module's docstring)."""
        encoded = windows(self.tokenizer, texts, self.settings)
        owner = encoded["overflow_to_sample_mapping"]
        tokens = [[] for _ in texts]  # per text: (word ids, starts, ends, p(not O), type, B over I) of each window
        order = sorted(range(len(owner)), key=lambda i: len(encoded["input_ids"][i]))  # little padding
        pad = self.tokenizer.pad_token_id or 0
        with torch.inference_mode():
            for first in range(0, len(order), WINDOWS_PER_BATCH):
                batch = order[first:first + WINDOWS_PER_BATCH]
                width = max(len(encoded["input_ids"][i]) for i in batch)
                ids = torch.full((len(batch), width), pad, dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for row, i in enumerate(batch):
                    ids[row, :len(encoded["input_ids"][i])] = torch.tensor(encoded["input_ids"][i])
                    mask[row, :len(encoded["input_ids"][i])] = 1
                logits = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).logits
                probabilities = logits.float().softmax(-1).cpu().numpy()
                for row, i in enumerate(batch):
                    tokens[owner[i]].append(_window_tokens(encoded, i, probabilities[row]))
        return [_words(pieces) for pieces in tokens]


def windows(tokenizer, texts: list[str], settings: DetectorSettings):
    """The texts' windows of at most `max_length` tokens, each sharing `stride` tokens with the one before it, with
    character offsets and the text each window belongs to (`overflow_to_sample_mapping`); training reads the same."""
    return tokenizer(texts, truncation=True, max_length=settings.max_length, stride=settings.stride,
                     return_overflowing_tokens=True, return_offsets_mapping=True, verbose=False)


def _window_tokens(encoded, window: int, probabilities: np.ndarray) -> tuple:
    """The tokens of a window that belong to a word: word ids, offsets and what the model says of each."""
    word_ids = np.array([-1 if w is None else w for w in encoded.word_ids(window)])
    keep = word_ids >= 0
    offsets = np.asarray(encoded["offset_mapping"][window]).reshape(-1, 2)[keep]
    probabilities = probabilities[: len(word_ids)][keep]
    begin, inside = probabilities[:, 1::2], probabilities[:, 2::2]
    kind = (begin + inside).argmax(-1)
    rows = np.arange(len(kind))
    return (word_ids[keep], offsets[:, 0], offsets[:, 1], 1.0 - probabilities[:, 0], kind,
            begin[rows, kind] > inside[rows, kind])


def _words(pieces: list[tuple]) -> WordScores:
    """Per word, over all the windows of a text: its offsets and its best-scored token's verdict."""
    if not pieces:
        empty = np.zeros(0, dtype=np.int64)
        return WordScores(empty, empty, np.zeros(0), empty, np.zeros(0, dtype=bool))
    word, start, end, score, kind, begin = (np.concatenate(column) for column in zip(*pieces))
    count = int(word.max()) + 1 if len(word) else 0
    starts = np.full(count, np.iinfo(np.int64).max)
    ends = np.zeros(count, dtype=np.int64)
    np.minimum.at(starts, word, start)
    np.maximum.at(ends, word, end)
    order = np.argsort(score, kind="stable")  # assigned in rising order: each word keeps its highest score
    scores, types = np.zeros(count), np.zeros(count, dtype=np.int64)
    scores[word[order]], types[word[order]] = score[order], kind[order]
    first = start == starts[word]  # a word's first token
    begins = np.zeros(count, dtype=bool)
    begins[word[first]] = begin[first]
    seen = starts < np.iinfo(np.int64).max
    return WordScores(starts[seen], ends[seen], scores[seen], types[seen], begins[seen])


def decode(words: WordScores, settings: DetectorSettings, text: str) -> list[Span]:
    """Spans of the words whose score reaches the threshold; neighbours of one type join unless one begins."""
    spans: list[list] = []  # [start, end, type, last word]
    for i in np.flatnonzero(words.scores >= settings.threshold):
        kind = int(words.types[i])
        if spans and spans[-1][3] == i - 1 and spans[-1][2] == kind and not words.begins[i]:
            spans[-1][1], spans[-1][3] = int(words.ends[i]), i
        else:
            spans.append([int(words.starts[i]), int(words.ends[i]), kind, i])
    categories, types = settings.categories, settings.types
    return [Span(start, end, categories.get(types[kind], types[kind])) for start, end, kind, _ in spans
            if text[start:end].strip()]


def zip_texts(texts: Iterable[str], score, size: int) -> Iterator[tuple[str, WordScores]]:
    """(text, its word scores) for each text, `score` called on `size` texts at a time."""
    batch: list[str] = []
    for text in texts:
        batch.append(text)
        if len(batch) == size:
            yield from zip(batch, score(batch))
            batch = []
    if batch:
        yield from zip(batch, score(batch))
