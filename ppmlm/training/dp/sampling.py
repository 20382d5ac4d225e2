"""Poisson sampling over training chunks (unit=chunk) or training users (unit=user), as DP-SGD's analysis assumes.

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


class PoissonUserSampler:
    """Poisson sampling of users: each user joins each logical batch with probability q, and then brings up to
    `max_chunks` of their chunks, drawn afresh for that step (all of them when null).

    Yields, per step, one list of chunk indices per sampled user. Under several processes a user belongs to
    one rank (a permutation of the users shared by all ranks, split r::world), so that a user's gradient is
    summed and clipped where it was computed; every rank yields exactly `steps` batches, empty ones included.
    """

    def __init__(self, chunks_of_user: list[list[int]], sample_rate: float, steps: int, max_chunks: int | None,
                 seed: int, rank: int = 0, world_size: int = 1, generator: torch.Generator | None = None):
        self.chunks_of_user, self.sample_rate, self.steps, self.max_chunks = chunks_of_user, sample_rate, steps, max_chunks
        self.seed, self.rank, self.world_size = seed, rank, world_size
        self.secure = generator is not None
        self.generator = generator or torch.Generator()
        self.set_epoch(0)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        if not self.secure:
            self.generator.manual_seed(stream_seed(self.seed, epoch, "poisson-users", self.rank))

    def __len__(self) -> int:
        return self.steps

    def __iter__(self):
        order = torch.randperm(len(self.chunks_of_user), generator=torch.Generator().manual_seed(
            stream_seed(self.seed, self.epoch, "user-shares")))
        share = order[self.rank :: self.world_size].tolist()
        for _ in range(self.steps):
            picked = (torch.rand(len(share), generator=self.generator) < self.sample_rate).tolist()
            yield [self.draw(self.chunks_of_user[user]) for user, keep in zip(share, picked) if keep]

    def draw(self, chunks: list[int]) -> list[int]:
        if self.max_chunks is None or len(chunks) <= self.max_chunks:
            return list(chunks)
        chosen = torch.rand(len(chunks), generator=self.generator).argsort()[: self.max_chunks].sort().values
        return [chunks[i] for i in chosen.tolist()]


def physical_batches(users: list[list[int]], size: int) -> list[tuple[list[int], list[int]]]:
    """One step's users packed in order into batches of at most `size` chunks: (chunk indices, user slot of each).

    A user with more chunks than fit is continued in the next batch, so only the last user of a batch can be
    unfinished, and memory is bounded by `size` per-chunk gradients plus one partial user sum.
    """
    flat = [(chunk, slot) for slot, chunks in enumerate(users) for chunk in chunks]
    return [([c for c, _ in flat[i : i + size]], [s for _, s in flat[i : i + size]]) for i in range(0, len(flat), size)]


def chunks_by_user(user_ids) -> dict[str, list[int]]:
    """Chunk indices grouped by user, users in order of first appearance."""
    groups: dict[str, list[int]] = {}
    for index, user in enumerate(user_ids):
        groups.setdefault(user, []).append(index)
    return groups


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
    keep = []
    for user, indices in chunks_by_user(features["user_id"]).items():
        if len(indices) > cap:
            g = torch.Generator().manual_seed(stream_seed(seed, 0, f"cap/{user}"))
            indices = [indices[i] for i in torch.randperm(len(indices), generator=g)[:cap].sort().values.tolist()]
        keep.extend(indices)
    return features.select(sorted(keep))
