"""Whole-word masking that never turns a protected token into a training target.

The product's privacy claim rests on one invariant: a token that belongs to an identifier is never a
label, so the model is never asked to predict it (it still sees it as context). Everything else follows
the paper's recipe: 15% of the eligible words of each sequence, every subword of a picked word masked
together, 80/10/10 mask/random/unchanged per word.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import torch

from ppmlm.errors import PPMLMError

IGNORE_INDEX = -100


class PrivacyMaskingCollator:
    """Pads tokenized chunks and masks whole eligible words, vectorized over the batch.

    Features need `input_ids`, `word_ids` (-1 for special tokens) and `protected`; `attention_mask` is
    used when present. Other keys (doc_id, user_id, ...) are dropped so they never reach the model.
    """

    def __init__(
        self,
        tokenizer,
        mlm_probability: float = 0.15,
        mask_replace_prob: float = 0.8,
        random_replace_prob: float = 0.1,
        respect_protection: bool = True,
        pad_to_multiple_of: int | None = None,
        generator: torch.Generator | None = None,
    ):
        if not 0.0 <= mlm_probability <= 1.0:
            raise ValueError(f"mlm_probability must be in [0, 1], got {mlm_probability}")
        if mask_replace_prob < 0 or random_replace_prob < 0 or mask_replace_prob + random_replace_prob > 1:
            raise ValueError(
                "mask_replace_prob and random_replace_prob must be non-negative and sum to at most 1, "
                f"got {mask_replace_prob} and {random_replace_prob}"
            )
        if tokenizer.mask_token_id is None or tokenizer.pad_token_id is None:
            raise ValueError("the tokenizer needs a mask token and a pad token for masked language modeling")
        if pad_to_multiple_of is not None and pad_to_multiple_of < 1:
            raise ValueError(f"pad_to_multiple_of must be a positive integer, got {pad_to_multiple_of}")
        self.tokenizer = tokenizer
        self.mlm_probability = float(mlm_probability)
        self.mask_replace_prob = float(mask_replace_prob)
        self.random_replace_prob = float(random_replace_prob)
        self.respect_protection = respect_protection
        self.pad_to_multiple_of = pad_to_multiple_of
        self.generator = generator
        self.mask_token_id = tokenizer.mask_token_id
        self.pad_token_id = tokenizer.pad_token_id
        # A random replacement must look like ordinary text: a [CLS], [SEP] or [PAD] planted mid-sentence
        # would teach the model something no real input contains.
        special = set(tokenizer.all_special_ids)
        special.update(i for i, tok in tokenizer.added_tokens_decoder.items() if tok.special)
        self._replacement_ids = torch.tensor(
            [i for i in range(len(tokenizer)) if i not in special], dtype=torch.long
        )
        if self.random_replace_prob > 0 and len(self._replacement_ids) == 0:
            raise ValueError("the tokenizer has no ordinary token to use as a random replacement")

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        input_ids, attention_mask, word_ids, protected = self._pad(features)
        labels, input_ids = self._mask(input_ids, word_ids, protected)
        return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}

    def _pad(self, features: Sequence[Mapping[str, Any]]):
        """Concatenates each column once and scatters it into padded tensors (one copy, no per-token loop)."""
        if len(features) == 0:
            raise ValueError("cannot collate an empty batch")
        missing = [key for key in ("input_ids", "word_ids", "protected") if key not in features[0]]
        if missing:
            raise PPMLMError(f"the features have no {' and no '.join(missing)} column: the collator masks whole words and "
                             "spares protected tokens, so it takes the rows of build_features whole (a Hugging Face "
                             "Trainer drops these columns unless TrainingArguments(remove_unused_columns=False))")
        lengths = [len(f["input_ids"]) for f in features]
        for i, f in enumerate(features):
            for key in ("word_ids", "protected"):
                if len(f[key]) != lengths[i]:
                    raise ValueError(
                        f"feature {i}: {key} has {len(f[key])} entries but input_ids has {lengths[i]}"
                    )
        width = max(lengths)
        if self.pad_to_multiple_of:
            width = math.ceil(width / self.pad_to_multiple_of) * self.pad_to_multiple_of
        length_tensor = torch.tensor(lengths)
        filled = torch.arange(width) < length_tensor[:, None]
        shape = (len(features), width)

        def column(key: str, fill, dtype: torch.dtype) -> torch.Tensor:
            out = torch.full(shape, fill, dtype=dtype)
            out[filled] = torch.cat([torch.as_tensor(f[key], dtype=dtype) for f in features])
            return out

        input_ids = column("input_ids", self.pad_token_id, torch.long)
        word_ids = column("word_ids", -1, torch.long)
        protected = column("protected", False, torch.bool)
        if all("attention_mask" in f for f in features):
            attention_mask = column("attention_mask", 0, torch.long)
        else:
            attention_mask = filled.long()
        return input_ids, attention_mask, word_ids, protected

    def _mask(self, input_ids: torch.Tensor, word_ids: torch.Tensor, protected: torch.Tensor):
        """Picks words on a [batch, word] grid, then gathers the decision back to every subword."""
        g = self.generator
        batch = input_ids.shape[0]
        n_words = int(word_ids.max()) + 1 if word_ids.numel() else 0
        # Column n_words collects special tokens and padding; it is never eligible.
        slot = torch.where(word_ids >= 0, word_ids, n_words)
        exists = torch.zeros(batch, n_words + 1, dtype=torch.bool).scatter_(1, slot, True)
        blocked = torch.zeros_like(exists)
        blocked[:, n_words] = True
        if self.respect_protection:
            blocked.scatter_(1, torch.where(protected, slot, n_words), True)
        eligible = exists & ~blocked

        # Stochastic rounding, floor(p * n + U), keeps the expected share at exactly p even for short
        # sequences: plain rounding would never pick a word of a three-word sequence (0.45 -> 0).
        # U is float64 so that 0.15 * 20 + U cannot round up to 4; the minimum covers p = 1, where n + U
        # can still round up to n + 1.
        n_eligible = eligible.sum(1)
        u = torch.rand(batch, dtype=torch.float64, generator=g)
        k = torch.minimum((self.mlm_probability * n_eligible + u).floor().long(), n_eligible)
        # Ineligible words score above every eligible one, so the k lowest ranks are eligible words.
        scores = torch.rand(batch, n_words + 1, generator=g).masked_fill_(~eligible, 2.0)
        ranks = torch.empty(batch, n_words + 1, dtype=torch.long).scatter_(
            1, scores.argsort(1), torch.arange(n_words + 1).expand(batch, -1).contiguous()
        )
        picked = ranks < k[:, None]

        # One draw per word, so all subwords of a word share the same fate.
        outcome = torch.rand(batch, n_words + 1, generator=g)
        target = picked.gather(1, slot)
        token_outcome = outcome.gather(1, slot)
        labels = input_ids.masked_fill(~target, IGNORE_INDEX)

        masked = target & (token_outcome < self.mask_replace_prob)
        randomized = (
            target
            & (token_outcome >= self.mask_replace_prob)
            & (token_outcome < self.mask_replace_prob + self.random_replace_prob)
        )
        input_ids = input_ids.masked_fill(masked, self.mask_token_id)
        n_random = int(randomized.sum())
        if n_random:
            draw = torch.randint(len(self._replacement_ids), (n_random,), generator=g)
            input_ids[randomized] = self._replacement_ids[draw]
        return labels, input_ids
