"""The masked-LM objective as a module, so that accelerate (DDP) and Opacus wrap one forward pass."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ppmlm.models import lm_head


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

    def forward(self, input_ids, attention_mask, labels) -> torch.Tensor:
        target = labels != -100
        count = target.sum(dim=1)
        head = self.head
        if head is not None:
            hidden = self.model.base_model(input_ids=input_ids, attention_mask=attention_mask)[0]
            token_loss = F.cross_entropy(head(hidden[target]).float(), labels[target], reduction="none")
            summed = torch.zeros(labels.shape[0], device=labels.device).index_add_(0, target.nonzero()[:, 0], token_loss)
        else:
            logits = self.model(input_ids=input_ids, attention_mask=attention_mask).logits
            # flattened [tokens, vocabulary]: contiguous classes, about twice as fast as a transposed view
            token_loss = F.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), reduction="none", ignore_index=-100)
            summed = token_loss.view_as(labels).sum(dim=1)
        return summed / count.clamp(min=1)


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
