"""The masked-LM objective as a module, so that accelerate (DDP) and Opacus wrap one forward pass."""
from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from ppmlm.models import lm_head
from ppmlm.training.packing import block_diagonal_mask, position_offset


class MaskedLMLoss(torch.nn.Module):
    """Per-sequence loss: mean over each sequence's masked tokens (DESIGN). A sequence with no masked
    token contributes zero, so the batch mean weighs every sequence alike and DP clipping sees one loss
    per sample.

    The vocabulary projection runs on masked positions only when the model exposes its head (BERT's
    `cls`, RoBERTa's `lm_head`): with 15% masking that skips most of the largest matrix product.
    """

    def __init__(self, model):
        super().__init__()
        self.model = model

    @property
    def head(self):
        """The vocabulary projection, when the architecture names it (not a registered submodule here)."""
        return lm_head(self.model)

    def forward(self, input_ids, attention_mask, labels, position_ids=None, chunk_ids=None) -> torch.Tensor:
        """One loss per sequence: per row, or per chunk of rows packed by `ppmlm.training.packing` (given
        `chunk_ids`, with `position_ids` counting from 0 in each chunk)."""
        target = labels != -100
        inputs = dict(input_ids=input_ids, attention_mask=attention_mask)
        if chunk_ids is None:
            owner, sequences = target.nonzero()[:, 0], labels.shape[0]
        else:
            owner, sequences = chunk_ids[target], int(chunk_ids.max()) + 1
            inputs.update(attention_mask=block_diagonal_mask(chunk_ids, self.model.config._attn_implementation),
                          position_ids=position_ids + self.position_offset)
        head = self.head
        if head is not None:
            hidden = self.model.base_model(**inputs)[0]
            token_loss = F.cross_entropy(head(hidden[target]).float(), labels[target], reduction="none")
        else:
            logits = self.model(**inputs).logits
            token_loss = F.cross_entropy(logits[target].float(), labels[target], reduction="none")
        summed = torch.zeros(sequences, device=labels.device).index_add_(0, owner, token_loss)
        count = torch.zeros(sequences, device=labels.device).index_add_(0, owner, torch.ones_like(token_loss))
        return summed / count.clamp(min=1)

    @functools.cached_property
    def position_offset(self) -> int:
        """Checked once, on the first packed batch: packing needs position ids and a per-row attention mask."""
        return position_offset(self.model)


def parameter_groups(objective, train_cfg) -> list[dict]:
    """AdamW groups: the parameters the checkpoint did not provide (the fresh MLM head of the default warm
    start) learn at `train.head_lr`, the pretrained ones at `train.lr`. The paper starts from trained heads;
    a fresh head at 1e-4 needs far more steps than a small corpus gives before it predicts anything."""
    fresh = getattr(objective.model, "ppmlm_fresh_parameters", frozenset())
    groups = {False: [], True: []}
    for name, parameter in objective.model.named_parameters():
        if parameter.requires_grad:
            groups[name in fresh and train_cfg.head_lr is not None].append(parameter)
    return [{"params": groups[False], "lr": train_cfg.lr}] + (
        [{"params": groups[True], "lr": train_cfg.head_lr}] if groups[True] else [])
