"""Neighbourhood membership inference (Mattern et al. 2023, "Membership Inference Attacks against Language
Models via Neighbourhood Comparison"): reference-free, so it is the attack for users without a population split.

A model fits its training text better than text that differs from it by a word or two, while text it never saw
sits among its neighbours. For a chunk x, each neighbour replaces `neighbour_words` of its words with the
audited model's own best guesses for them (the i-th neighbour that replaces a word takes the model's i-th best
word there, never the original), and

    score(x) = mean over neighbours n of loss(n) - loss(x)        (higher: member)

where loss is the masked-LM loss of the loss attack under the first `neighbour_maskings` of x's maskings
(the same words hidden in x and in every neighbour). The paper draws neighbours from a separate MLM; we use the
audited model, the one MLM every audit has: the default warm start's MLM head is untrained, and a model built
from a configuration has no starting checkpoint at all. Only words that are one token are replaced, with a
word that is one token too, so that a neighbour keeps the chunk's words and maskings.

Cost: one pass per chunk for the guesses, and neighbours x neighbour_maskings passes to score them, on the
first `neighbour_chunks_per_user` audited chunks of each user.
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache

import numpy as np
import torch

from ppmlm.audit.sampling import Sample
from ppmlm.audit.scoring import SampleResult, masked_log_probs, score_samples

CANDIDATES = 32  # best guesses read at each replaced word; the usable ones are taken in order


def chosen_chunks(samples: list[Sample], per_user: int | None) -> list[int]:
    """Indices of the first `per_user` samples of each user (None: all)."""
    seen: dict[str, int] = {}
    chosen = []
    for index, sample in enumerate(samples):
        seen[sample.user] = seen.get(sample.user, 0) + 1
        if per_user is None or seen[sample.user] <= per_user:
            chosen.append(index)
    return chosen


def single_token_words(sample: Sample) -> np.ndarray:
    """The maskable words of a sample that are one token each."""
    counts = np.bincount(sample.word_ids[sample.word_ids >= 0])
    return np.array([w for w in sample.maskable_words if counts[w] == 1], dtype=np.int64)


def replacements(sample: Sample, neighbours: int, words: int, generator: torch.Generator) -> list[np.ndarray] | None:
    """The words each neighbour replaces: `words` distinct single-token words per neighbour, walking through a
    random order of them (a word serves several neighbours only when there are too few); None when the sample
    has fewer such words than `words`."""
    eligible = single_token_words(sample)
    if len(eligible) < words:
        return None
    rounds = -(-neighbours * words // len(eligible))
    stream = torch.cat([torch.randperm(len(eligible), generator=generator) for _ in range(rounds)]).numpy()
    return [eligible[stream[i * words : (i + 1) * words]] for i in range(neighbours)]


class Substitutes:
    """The tokens that can stand for a one-token word: a whole word of letters or digits that the tokenizer reads
    back as that very token (so no subword piece such as BERT's `##ing`, no special or punctuation token)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.special = set(tokenizer.all_special_ids)
        self.usable = lru_cache(maxsize=None)(self._usable)

    def _usable(self, token: int) -> bool:
        if token in self.special:
            return False
        text = self.tokenizer.decode([token])
        return any(c.isalnum() for c in text) and self.tokenizer(text, add_special_tokens=False)["input_ids"] == [token]


@torch.inference_mode()
def make_neighbours(model, tokenizer, samples: list[Sample], chosen: list[int], neighbours: int, words: int,
                    generator: torch.Generator, mask_token_id: int, pad_token_id: int,
                    batch_size: int) -> dict[int, list[Sample]]:
    """Neighbours of each chosen sample (index -> its neighbours), from the model's guesses with every replaced
    word of the sample masked at once (one pass per sample)."""
    plans = {i: plan for i in chosen if (plan := replacements(samples[i], neighbours, words, generator)) is not None}
    substitutes = Substitutes(tokenizer)
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    made: dict[int, list[Sample]] = {}
    order = list(plans)
    try:
        for begin in range(0, len(order), batch_size):
            batch = order[begin : begin + batch_size]
            width = max(len(samples[i].input_ids) for i in batch)
            input_ids = np.full((len(batch), width), pad_token_id, dtype=np.int64)
            attention = np.zeros((len(batch), width), dtype=np.int64)
            target = np.zeros((len(batch), width), dtype=bool)
            for row, i in enumerate(batch):
                sample = samples[i]
                length = len(sample.input_ids)
                input_ids[row, :length] = sample.input_ids
                attention[row, :length] = 1
                target[row, :length] = np.isin(sample.word_ids, np.concatenate(plans[i]))
            masked = np.where(target, mask_token_id, input_ids)
            log_probs = masked_log_probs(model, torch.from_numpy(masked).to(device), torch.from_numpy(attention).to(device),
                                         torch.from_numpy(target).to(device))
            guesses = log_probs.topk(min(CANDIDATES, log_probs.shape[-1]), dim=-1).indices.cpu().numpy()
            rows, positions = np.nonzero(target)
            for row, i in enumerate(batch):
                mine = np.flatnonzero(rows == row)  # this row's masked positions, in the order of `guesses`
                ranked = {int(samples[i].word_ids[positions[k]]): guesses[k] for k in mine}
                made[i] = _neighbours(samples[i], plans[i], ranked, substitutes)
    finally:
        model.train(was_training)
    return made


def _neighbours(sample: Sample, plan: list[np.ndarray], ranked: dict[int, np.ndarray], substitutes: Substitutes) -> list[Sample]:
    """A neighbour per entry of `plan`: the i-th neighbour to replace a word takes its i-th usable guess."""
    used: dict[int, int] = {}
    position = {int(w): int(np.flatnonzero(sample.word_ids == w)[0]) for w in np.unique(np.concatenate(plan))}
    result = []
    for words in plan:
        input_ids = sample.input_ids.copy()
        for word in words.tolist():
            original = int(sample.input_ids[position[word]])
            usable = [int(t) for t in ranked[word] if t != original and substitutes.usable(int(t))]
            if usable:
                input_ids[position[word]] = usable[min(used.get(word, 0), len(usable) - 1)]
            used[word] = used.get(word, 0) + 1
        if not np.array_equal(input_ids, sample.input_ids):
            result.append(dataclasses.replace(sample, input_ids=input_ids))
    return result


def masked_loss(result: SampleResult, maskings: int) -> float:
    """The loss attack's loss over the first `maskings` maskings only."""
    return float((result.nll[:maskings] / np.maximum(result.tokens[:maskings], 1)).mean())


def neighbourhood_losses(model, tokenizer, samples: list[Sample], plans: list[list[np.ndarray]], results: list[SampleResult],
                         config, neighbours: int, generator: torch.Generator,
                         passes: dict) -> dict[int, tuple[float, float, int]]:
    """For each sample that got neighbours (index -> (its loss, its neighbours' mean loss, how many)), `neighbours`
    per chunk, under the first `config.neighbour_maskings` of its maskings."""
    chosen = chosen_chunks(samples, config.neighbour_chunks_per_user)
    made = make_neighbours(model, tokenizer, samples, chosen, neighbours, config.neighbour_words, generator,
                           passes["mask_token_id"], passes["pad_token_id"], passes["batch_size"])
    made = {i: found for i, found in made.items() if found}
    owners = [i for i, found in made.items() for _ in found]
    scored = score_samples(model, [n for found in made.values() for n in found],
                           [plans[i][: config.neighbour_maskings] for i in owners], with_predictions=False,
                           description="audit neighbours", **passes)
    losses: dict[int, list[float]] = {}
    for owner, result in zip(owners, scored):
        losses.setdefault(owner, []).append(result.loss)
    return {i: (masked_loss(results[i], config.neighbour_maskings), float(np.mean(found)), len(found))
            for i, found in losses.items()}
