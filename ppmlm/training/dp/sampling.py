"""Poisson sampling over training chunks, as DP-SGD's analysis assumes.

The batches are split into physical batches by Opacus's `BatchMemoryManager`. An empty logical batch still
takes a step: zero gradient plus noise, counted by the accountant (Opacus's own loader does the same).
Several processes: each rank samples its share of the chunks with the same rate, so the union is one
Poisson batch; Opacus's `DistributedDPOptimizer` adds the noise on rank 0 only, divides each rank's sum by
the expected batch / world size, then averages, so the noise on the averaged gradient has standard
deviation sigma * C / expected logical batch, as in one process (tested).
"""
from __future__ import annotations

import hashlib

import torch
from torch.utils.data import Sampler


class PoissonChunkSampler(Sampler):
    """Poisson sampling of training chunks: each chunk joins each logical batch with probability q.

    Under several processes, rank r draws only among its share of the chunks (a permutation shared by all
    ranks, split r::world): the union of the ranks' batches is one Poisson batch of the whole set. Every
    rank yields exactly `steps` batches, empty ones included, so that the ranks step together (Opacus's
    distributed sampler skips empty local batches, which would desynchronize them).
    """

    def __init__(self, num_chunks: int, sample_rate: float, steps: int, seed: int, rank: int = 0,
                 world_size: int = 1, generator: torch.Generator | None = None):
        self.num_chunks, self.sample_rate, self.steps = num_chunks, sample_rate, steps
        self.seed, self.rank, self.world_size = seed, rank, world_size
        self.secure = generator is not None  # a secure generator is never reseeded
        self.generator = generator or torch.Generator()
        self.set_epoch(0)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        if not self.secure:
            self.generator.manual_seed(stream_seed(self.seed, epoch, "poisson", self.rank))

    def __len__(self) -> int:
        return self.steps

    def __iter__(self):
        order = torch.randperm(self.num_chunks,
                               generator=torch.Generator().manual_seed(stream_seed(self.seed, self.epoch, "shares")))
        share = order[self.rank :: self.world_size]
        for _ in range(self.steps):
            picked = torch.rand(len(share), generator=self.generator) < self.sample_rate
            yield share[picked].tolist()


def stream_seed(seed: int, epoch: int, stream: str, rank: int = 0) -> int:
    """An independent 63-bit seed per (run seed, epoch, purpose, rank): resuming replays the same draws."""
    digest = hashlib.blake2b(f"{seed}/{epoch}/{stream}/{rank}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


class CollateOrNone:
    """The masking collator, or None for an empty batch (the step then adds noise to a zero gradient)."""

    def __init__(self, collator):
        self.collator = collator

    def __call__(self, rows):
        return self.collator(rows) if rows else None


def cap_chunks_per_user(features, cap: int | None, seed: int):
    """At most `cap` chunks per user, chosen at random from (seed, user): the same on every rank and rerun."""
    if cap is None:
        return features
    by_user: dict[str, list[int]] = {}
    for index, user in enumerate(features["user_id"]):
        by_user.setdefault(user, []).append(index)
    keep = []
    for user, indices in by_user.items():
        if len(indices) > cap:
            g = torch.Generator().manual_seed(stream_seed(seed, 0, f"cap/{user}"))
            indices = [indices[i] for i in torch.randperm(len(indices), generator=g)[:cap].sort().values.tolist()]
        keep.extend(indices)
    return features.select(sorted(keep))
