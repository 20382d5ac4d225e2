"""Which chunks the audit scores, and which words each of its maskings hides.

Both come from a generator seeded by the audit's seed alone, so every epoch audits the same users, the
same chunks and the same maskings: differences between epochs are the model's, not the draw's, and the
reference model's energies can be computed once. The global random state is never touched (training
resumes depend on it). The population users lent to the non-member side come from a keyed hash of the
seed and the user id instead: the reference model's training, in another run, must leave out the same ones.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np
import torch

from ppmlm.audit.config import lent_count
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
    first_word: int = 0  # index in its document's words of the chunk's word 0 (document spans to chunk words)

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


def lent_users(population: list[str], lend, seed: int) -> list[str]:
    """The population users `audit.lend_population` (`lend`) moves to the audit's non-member side: a seeded
    choice, the same wherever the split is the same (every epoch, a resumed run, the reference's training)."""
    count = lent_count(len(population), lend)
    ranked = sorted(population, key=lambda user: hashlib.blake2b(f"lend\x00{seed}\x00{user}".encode(), digest_size=8).digest())
    return sorted(ranked[:count])


def lent_by_run(cfg, split) -> list[str]:
    """`lent_users` of a run configuration's audit section (a run from before lending: none)."""
    audit = cfg.get("audit") or {}
    return lent_users(split.population, audit.get("lend_population", 0), audit.get("seed", 0))


def pick_chunks(tokens: list[int], max_chunks: int | None, max_tokens: int | None, generator: torch.Generator) -> list[int]:
    """Indices of the chunks (of `tokens` tokens each) the audit scores for one user: taken in a random
    order while they stay within both limits (None: no limit), the first one always, so every audited
    user is scored; every chunk when all fit."""
    if (max_chunks is None or len(tokens) <= max_chunks) and (max_tokens is None or sum(tokens) <= max_tokens):
        return list(range(len(tokens)))
    chosen, total = [], 0
    for index in torch.randperm(len(tokens), generator=generator).tolist():
        if chosen and (len(chosen) == max_chunks or max_tokens is not None and total + tokens[index] > max_tokens):
            break
        chosen.append(index)
        total += tokens[index]
    return sorted(chosen)


def build_samples(corpus, users: dict[str, bool], segmenter, tokenizer, max_length: int, max_chunks_per_user: int | None,
                  generator: torch.Generator, max_tokens_per_user: int | None = None) -> tuple[list[Sample], dict[str, int]]:
    """The chunks of the chosen users (user -> is a member), cut exactly as training cuts them
    (`build_features`), with the term of every word, at most `max_chunks_per_user` and
    `max_tokens_per_user` tokens each (`pick_chunks`); and how many chunks each user has in all."""
    chunks = user_chunks(corpus, users, segmenter, tokenizer, max_length)
    return pick_samples(chunks, max_chunks_per_user, max_tokens_per_user, generator), {u: len(c) for u, c in chunks.items()}


def user_chunks(corpus, users: dict[str, bool], segmenter, tokenizer, max_length: int) -> dict[str, list[Sample]]:
    """Every chunk of the chosen users (user -> is a member), by user in sorted order, cut exactly as training
    cuts them (`build_features`), with the term of every word."""
    records = [r for r in corpus.select_columns(["text", "user_id", "doc_id"]).to_list() if r["user_id"] in users]
    terms_of_doc = {r["doc_id"]: words.terms for r, words in zip(records, segmenter.pipe([r["text"] for r in records]))}
    features = build_features(records, None, tokenizer, max_length=max_length).to_list()
    chunks: dict[str, list[Sample]] = {}
    previous_doc, count = None, 0
    for feature in features:  # a document's chunks are consecutive rows
        count = count + 1 if feature["doc_id"] == previous_doc else 0
        previous_doc = feature["doc_id"]
        word_ids = np.asarray(feature["word_ids"], dtype=np.int64)
        first, n_words = feature["word_offset"], int(word_ids.max()) + 1
        chunks.setdefault(feature["user_id"], []).append(Sample(
            user=feature["user_id"], doc_id=feature["doc_id"], chunk=count, member=users[feature["user_id"]],
            input_ids=np.asarray(feature["input_ids"], dtype=np.int64), word_ids=word_ids,
            terms=terms_of_doc[feature["doc_id"]][first : first + n_words], first_word=first,
        ))
    return dict(sorted(chunks.items()))


def pick_samples(chunks: dict[str, list[Sample]], max_chunks_per_user: int | None, max_tokens_per_user: int | None,
                 generator: torch.Generator) -> list[Sample]:
    """The chunks the audit scores (`pick_chunks` of each user, users in sorted order)."""
    return [samples[i] for _, samples in sorted(chunks.items())
            for i in pick_chunks([len(s.input_ids) for s in samples], max_chunks_per_user, max_tokens_per_user, generator)]


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
