"""Packing (`train.packing`): several whole chunks in one row of `train.max_length` tokens, so that a step computes
text rather than padding.

A packed row computes for each chunk what the chunk alone would give: the chunk attends only to its own tokens (a
block-diagonal attention mask), its positions restart as if it began the sequence, its words are masked by the
masking collator before the chunks are laid into rows (the same draws as unpacked), and the loss is each chunk's
mean over its masked tokens, averaged over the batch's chunks. Packing changes how many chunks a step holds and
where they sit, never what a chunk teaches. Non-private runs only: a row holds several chunks, often of several
users, which DP-SGD's per-row clipping would treat as one unit of privacy.
"""
from __future__ import annotations

import inspect
from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow.compute as pc
import torch

from ppmlm.errors import PPMLMError
from ppmlm.masking.collator import PrivacyMaskingCollator

PACKING_ATTENTION = ("sdpa", "eager")  # attention implementations that take a per-row [query, key] mask


def pack_rows(lengths: Sequence[int], capacity: int, order: Sequence[int]) -> list[list[int]]:
    """Best-fit decreasing: chunk indices longest first (ties in `order`), each into the row it fills most.

    The rows' lengths depend on the multiset of lengths alone, so every epoch's shuffle gives the same number
    of rows (and steps); only which chunk of a given length sits where changes. A bit mask of the free
    spaces some row has finds the tightest fit in a few integer operations, for millions of chunks.
    """
    rows: list[list[int]] = []
    open_rows: dict[int, list[int]] = {}  # free tokens -> rows with exactly that many free
    free_spaces = 0  # bit f is set when some row has f tokens free
    for index in sorted(order, key=lambda i: -lengths[i]):
        need = lengths[index]
        if need > capacity:
            raise ValueError(f"chunk {index} has {need} tokens, more than a row's {capacity}")
        fitting = free_spaces >> need
        if fitting:
            free = need + (fitting & -fitting).bit_length() - 1
            row = open_rows[free].pop()
            if not open_rows[free]:
                free_spaces &= ~(1 << free)
        else:
            row, free = len(rows), capacity
            rows.append([])
        rows[row].append(index)
        left = free - need
        if left:
            open_rows.setdefault(left, []).append(row)
            free_spaces |= 1 << left
    return rows


class PackedRows(torch.utils.data.Dataset):
    """The training chunks as rows of at most `capacity` tokens, packed anew for each epoch from a shuffle seeded
    by (seed, epoch), alike on every process: item i is the list of row i's chunks."""

    def __init__(self, chunks, capacity: int, seed: int):
        self.chunks, self.capacity, self.seed = chunks, capacity, seed
        # read from Arrow: a million chunks' token lists are never made Python objects
        self.lengths = pc.list_value_length(chunks.with_format("arrow")["input_ids"]).to_numpy().astype(np.int64)
        self.set_epoch(0)

    def set_epoch(self, epoch: int) -> None:
        order = np.random.default_rng([self.seed, epoch]).permutation(len(self.lengths)).tolist()
        self.rows = pack_rows(self.lengths.tolist(), self.capacity, order)

    @property
    def fill(self) -> float:
        """Share of the rows' positions that hold text."""
        return float(self.lengths.sum()) / (len(self.rows) * self.capacity) if self.rows else 0.0

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, row: int) -> list[dict[str, Any]]:
        columns = self.chunks[self.rows[row]]
        return [dict(zip(columns, values)) for values in zip(*columns.values())]


class PackingCollator:
    """Masks the chunks of a batch of rows as one unpacked batch, then lays each row's chunks end to end.

    Returns `input_ids`, `labels`, `attention_mask` (1 on text, 0 on the padding after a row's last chunk),
    `position_ids` (each chunk counting from 0) and `chunk_ids` (the chunk, numbered over the batch, that each
    position holds; -1 on padding), which `MaskedLMLoss` turns into the block-diagonal mask and per-chunk losses.
    """

    def __init__(self, masking: PrivacyMaskingCollator):
        self.masking = masking

    def __call__(self, rows: Sequence[Sequence[Mapping[str, Any]]]) -> dict[str, torch.Tensor]:
        chunks = [chunk for row in rows for chunk in row]
        masked = self.masking(chunks)  # [chunks, longest chunk]: the draws of an unpacked batch
        lengths = torch.tensor([len(chunk["input_ids"]) for chunk in chunks])
        row_of_chunk = torch.repeat_interleave(torch.tensor([len(row) for row in rows]))
        row_lengths = torch.zeros(len(rows), dtype=torch.long).index_add_(0, row_of_chunk, lengths)
        # a chunk starts where it starts in the batch's concatenation, less the rows before its own
        starts = (lengths.cumsum(0) - lengths) - (row_lengths.cumsum(0) - row_lengths)[row_of_chunk]
        width = int(row_lengths.max())
        if self.masking.pad_to_multiple_of:
            width = -(-width // self.masking.pad_to_multiple_of) * self.masking.pad_to_multiple_of
        text = torch.arange(masked["input_ids"].shape[1]) < lengths[:, None]  # [chunks, longest chunk]
        chunk_of_token = torch.arange(len(chunks))[:, None].expand_as(text)[text]
        position = torch.arange(text.shape[1]).expand_as(text)[text]
        row, column = row_of_chunk[chunk_of_token], starts[chunk_of_token] + position

        def laid(values: torch.Tensor, fill: int) -> torch.Tensor:
            out = torch.full((len(rows), width), fill, dtype=values.dtype)
            out[row, column] = values
            return out

        return {"input_ids": laid(masked["input_ids"][text], self.masking.pad_token_id),
                "attention_mask": laid(masked["attention_mask"][text], 0),
                "labels": laid(masked["labels"][text], -100),
                "position_ids": laid(position, 0),
                "chunk_ids": laid(chunk_of_token, -1)}


def position_offset(model) -> int:
    """What the model adds to a token's index to get its position id (RoBERTa counts from its padding id + 1,
    BERT from 0); refuses, naming the key, a model that takes no position ids or no per-row attention mask."""
    base = model.base_model
    implementation = getattr(model.config, "_attn_implementation", None)
    if "position_ids" not in inspect.signature(base.forward).parameters:
        raise PPMLMError(f"train.packing=true: {type(base).__name__} takes no position_ids, which packed chunks need "
                         "to restart their positions; set train.packing=false")
    if implementation not in PACKING_ATTENTION:
        raise PPMLMError(f"train.packing=true: the model's attention implementation is {implementation!r}, which takes "
                         f"no block-diagonal mask; packing needs one of {', '.join(PACKING_ATTENTION)} "
                         "(attn_implementation in the model's config), or set train.packing=false")
    padding_idx = getattr(getattr(base, "embeddings", None), "padding_idx", None)
    return 0 if padding_idx is None else padding_idx + 1


def block_diagonal_mask(chunk_ids: torch.Tensor, implementation: str) -> torch.Tensor:
    """[rows, 1, query, key]: a position attends to the positions of its own chunk. Padding attends to padding,
    so that no query row is empty (an all-masked softmax is NaN); no chunk attends to it."""
    same = chunk_ids[:, None, :, None] == chunk_ids[:, None, None, :]
    if implementation == "sdpa":
        return same
    return torch.zeros(same.shape, device=same.device).masked_fill_(~same, torch.finfo(torch.float32).min)
