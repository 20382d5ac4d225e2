"""What Opacus needs from a Hugging Face masked LM, and why.

Opacus computes a gradient per row of each layer's input, so every layer must see the batch as
(sequences, ...). Three things in a stock BERT/RoBERTa break that:
1. the prediction head owns a `bias` that is the same Parameter as `decoder.bias`: Opacus sees a parameter
   on an unsupported module and fails; the shared attribute is removed for training and put back for
   `save_pretrained` (`hf_layout`);
2. BERT takes its position ids and token type ids from buffers of batch size 1 (Opacus issue 841): the
   per-sample gradient of the position embeddings comes out with one row; we pass explicit per-sequence ids
   (`per_sample_ids`);
3. `MaskedLMLoss` projects only the masked positions, flattened over the batch (`hidden[target]`), so the
   head's rows are tokens of several sequences. `PerSampleMaskedLMLoss` gathers each sequence's masked
   positions into a (sequences, most masked per sequence, hidden) tensor instead: per-sample correct, and
   still skips the ~85% of positions that carry no label.
"""
from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F

from ppmlm.errors import PPMLMError
from ppmlm.models import lm_head
from ppmlm.training.objective import MaskedLMLoss


def prediction_head(model):
    """The vocabulary head whose `bias` is shared with `decoder.bias` (BERT `cls.predictions`, RoBERTa `lm_head`)."""
    head = lm_head(model)
    head = getattr(head, "predictions", head)  # BERT's `cls` wraps it; RoBERTa's `lm_head` is it
    if head is None or not isinstance(getattr(head, "decoder", None), torch.nn.Linear):
        raise PPMLMError(
            f"DP-SGD supports BERT- and RoBERTa-family masked LMs (a `cls.predictions` or `lm_head` head with a "
            f"`decoder`); {type(model).__name__} has neither"
        )
    return head


def unshare_head_bias(model) -> None:
    """Drops the head's alias of `decoder.bias`, so that the bias belongs to the decoder only (Opacus).

    A model with untied weights (tie_word_embeddings=false) holds a separate copy that its forward pass
    never reads: it is frozen instead, and saved as it is.
    """
    head = prediction_head(model)
    bias = head._parameters.get("bias")
    if bias is not None and bias is head.decoder.bias:
        del head._parameters["bias"]
    elif bias is not None:
        bias.requires_grad_(False)


@contextlib.contextmanager
def hf_layout(model):
    """The model as Hugging Face lays it out (head bias aliased again), e.g. for `save_pretrained`."""
    head = prediction_head(model)
    restore = "bias" not in head._parameters
    if restore:
        head.bias = head.decoder.bias
    try:
        yield model
    finally:
        if restore:
            del head._parameters["bias"]


def per_sample_ids(model, input_ids: torch.Tensor) -> dict:
    """Explicit position and token type ids of shape (batch, length) (Opacus issue 841).

    RoBERTa-family embeddings number positions from padding_idx + 1 and skip padding; BERT counts from 0.
    """
    embeddings = model.base_model.embeddings
    padding_idx = getattr(embeddings, "padding_idx", None)
    if padding_idx is not None and hasattr(embeddings, "create_position_ids_from_input_ids"):
        positions = embeddings.create_position_ids_from_input_ids(input_ids, padding_idx)
    else:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device).expand_as(input_ids).contiguous()
    ids = {"position_ids": positions}
    if getattr(embeddings, "token_type_embeddings", None) is not None:
        ids["token_type_ids"] = torch.zeros_like(input_ids)
    return ids


class PerSampleMaskedLMLoss(MaskedLMLoss):
    """`MaskedLMLoss` in which every layer sees one row per sequence (same loss, same head saving).

    Each row's masked positions are gathered, in order, to the front of a (batch, K, hidden) tensor, K the
    most masked tokens of any row; the padding slots carry the ignore label.
    """

    def forward(self, input_ids, attention_mask, labels) -> torch.Tensor:
        target = labels != -100
        count = target.sum(dim=1)
        width = max(1, int(count.max()))
        order = torch.argsort((~target).to(torch.int8), dim=1, stable=True)[:, :width]  # masked positions first
        hidden = self.model.base_model(input_ids=input_ids, attention_mask=attention_mask,
                                       **per_sample_ids(self.model, input_ids))[0]
        picked = hidden.gather(1, order.unsqueeze(-1).expand(-1, -1, hidden.shape[-1]))
        logits = self.head(picked)
        token_loss = F.cross_entropy(logits.float().transpose(1, 2), labels.gather(1, order), reduction="none")
        return token_loss.sum(dim=1) / count.clamp(min=1)


def embeddings_tied_and_trained(model) -> bool:
    output = model.get_output_embeddings()
    weight = model.get_input_embeddings().weight
    return output is not None and output.weight is weight and weight.requires_grad


def is_norm(model, name: str) -> bool:
    module = model.get_submodule(name.rsplit(".", 1)[0])
    return isinstance(module, torch.nn.LayerNorm)


def train_only(model, parameters: str) -> None:
    """Freezes what `train.dp.parameters` leaves out (TRAINED_PARAMETERS): `bias` keeps the bias terms (LayerNorm's
    included), `bias+norm` the LayerNorm gains too, `all` everything the run already trains."""
    if parameters == "all":
        return
    for name, parameter in model.named_parameters():
        kept = name.endswith("bias") or (parameters == "bias+norm" and is_norm(model, name))
        if not kept:
            parameter.requires_grad_(False)
