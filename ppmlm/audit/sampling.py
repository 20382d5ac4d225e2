"""Which chunks the audit scores, and which words each of its maskings hides.

Both come from a generator seeded by the audit's seed alone, so every epoch audits the same users, the
same chunks and the same maskings: differences between epochs are the model's, not the draw's, and the
reference model's energies can be computed once. The global random state is never touched (training
resumes depend on it).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ppmlm.features import build_features


@dataclass
class Sample:
    """One audited chunk: a training unit of the model, the membership experiment's sample."""

    user: str
    doc_id: str
    chunk: int  # index of the chunk within its document
    member: bool
    input_ids: np.ndarray  # token ids, special tokens included
    word_ids: np.ndarray  # chunk word of each token, -1 for special tokens
    terms: list  # term of each chunk word (None: punctuation), in the blacklist's normalization

    @property
    def maskable_words(self) -> np.ndarray:
        """Words with a letter or digit that own at least one token: the ones a masking can hide."""
        present = np.unique(self.word_ids[self.word_ids >= 0])
        return np.array([w for w in present if self.terms[w] is not None], dtype=np.int64)


def choose_users(users: list[str], limit: int | None, generator: torch.Generator) -> list[str]:
    """A seeded random subset of at most `limit` users, in a stable order."""
    users = sorted(users)
    if limit is None or len(users) <= limit:
        return users
    return sorted(users[i] for i in torch.randperm(len(users), generator=generator)[:limit].tolist())


def build_samples(corpus, users: dict[str, bool], segmenter, tokenizer, max_length: int,
                  max_chunks_per_user: int | None, generator: torch.Generator) -> list[Sample]:
    """The chunks of the chosen users (user -> is a member), at most `max_chunks_per_user` each, cut
    exactly as training cuts them (`build_features`), with the term of every word."""
    records = [r for r in corpus.select_columns(["text", "user_id", "doc_id"]).to_list() if r["user_id"] in users]
    terms_of_doc = {r["doc_id"]: words.terms for r, words in zip(records, segmenter.pipe([r["text"] for r in records]))}
    features = build_features(records, None, tokenizer, max_length=max_length).to_list()
    rows_of_user: dict[str, list[int]] = {}
    chunk_of_row, previous_doc, count = [], None, 0
    for row, feature in enumerate(features):  # a document's chunks are consecutive rows
        count = count + 1 if feature["doc_id"] == previous_doc else 0
        chunk_of_row.append(count)
        previous_doc = feature["doc_id"]
        rows_of_user.setdefault(feature["user_id"], []).append(row)
    samples = []
    for user in sorted(rows_of_user):
        rows = rows_of_user[user]
        if max_chunks_per_user is not None and len(rows) > max_chunks_per_user:
            rows = sorted(rows[i] for i in torch.randperm(len(rows), generator=generator)[:max_chunks_per_user].tolist())
        for row in rows:
            feature = features[row]
            word_ids = np.asarray(feature["word_ids"], dtype=np.int64)
            first, n_words = feature["word_offset"], int(word_ids.max()) + 1
            samples.append(Sample(
                user=user, doc_id=feature["doc_id"], chunk=chunk_of_row[row], member=users[user],
                input_ids=np.asarray(feature["input_ids"], dtype=np.int64), word_ids=word_ids,
                terms=terms_of_doc[feature["doc_id"]][first : first + n_words],
            ))
    return samples


def masking_plan(sample: Sample, maskings: int, mlm_probability: float, each_word: bool,
                 generator: torch.Generator) -> list[np.ndarray]:
    """The words hidden by each masking of a sample.

    Random maskings take consecutive slices of ceil(p * n) words from a stream of random orders of the n
    maskable words, so each masking is a uniform draw of p of the words and, over K >= 1/p maskings,
    every word is hidden at least once (the privacy score needs every identifier tried). A slice that
    spans two orders drops a word drawn twice.
    """
    words = sample.maskable_words
    if len(words) == 0:
        return []
    if each_word:
        return [words[i : i + 1] for i in range(len(words))]
    size = max(1, math.ceil(mlm_probability * len(words)))
    rounds = math.ceil(maskings * size / len(words))
    stream = torch.cat([torch.randperm(len(words), generator=generator) for _ in range(rounds)]).numpy()
    return [np.unique(words[stream[i * size : (i + 1) * size]]) for i in range(maskings)]
