"""Running a masked LM over the audit's maskings: losses for the membership attacks, and the whole
words it predicts for utility, the privacy score and the identifier-count attack.

Every masking of every sample is one row; rows are batched by length so that padding stays small, and
the vocabulary projection runs on masked positions only (with 15% masking that skips most of the
largest matrix product, as in training).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import groupby

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from ppmlm.models import lm_head


@dataclass
class WordPrediction:
    """The model's guess for one masked word: the argmax token of each of its subwords."""

    word: int
    predicted: tuple[int, ...]
    original: tuple[int, ...]

    @property
    def correct(self) -> bool:
        return self.predicted == self.original


@dataclass
class SampleResult:
    """One sample under one model: per masking, the summed negative log-likelihood of the masked tokens
    and their number; with predictions, the guessed words of each masking."""

    nll: np.ndarray
    tokens: np.ndarray
    predictions: list[list[WordPrediction]] = field(default_factory=list)

    @property
    def energy(self) -> float:
        """Mireshghallah et al.'s energy: the mean over maskings of the summed NLL of the masked tokens."""
        return float(self.nll.mean())

    @property
    def loss(self) -> float:
        """Masked-LM loss as training computes it (mean over a sequence's masked tokens), averaged over
        maskings."""
        return float((self.nll / np.maximum(self.tokens, 1)).mean())


def masked_log_probs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Log-probabilities over the vocabulary at `positions` (a boolean mask), computing the head there only
    when the architecture names it (BERT's `cls`, RoBERTa's `lm_head`)."""
    head = lm_head(model)
    if head is not None:
        hidden = model.base_model(input_ids=input_ids, attention_mask=attention_mask)[0]
        logits = head(hidden[positions])
    else:
        logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[positions]
    return F.log_softmax(logits.float(), dim=-1)


@torch.inference_mode()
def score_samples(model, samples, plans, mask_token_id: int, pad_token_id: int, batch_size: int = 16,
                  with_predictions: bool = True, progress: bool = False, description: str = "audit") -> list[SampleResult]:
    """One SampleResult per sample, its maskings given by `plans` (a list of word-index arrays per sample).

    The model is put in eval mode for the pass (no dropout) and given back in the mode it was in.
    """
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    results = [SampleResult(np.zeros(len(plan)), np.zeros(len(plan), dtype=np.int64),
                            [[] for _ in plan] if with_predictions else []) for plan in plans]
    rows = [(s, m) for s, plan in enumerate(plans) for m in range(len(plan))]
    rows.sort(key=lambda row: -len(samples[row[0]].input_ids))
    try:
        for begin in tqdm(range(0, len(rows), batch_size), desc=description, disable=not progress):
            batch = rows[begin : begin + batch_size]
            width = max(len(samples[s].input_ids) for s, _ in batch)
            originals = np.full((len(batch), width), pad_token_id, dtype=np.int64)
            word_ids = np.full((len(batch), width), -1, dtype=np.int64)
            attention = np.zeros((len(batch), width), dtype=np.int64)
            target = np.zeros((len(batch), width), dtype=bool)
            for i, (s, m) in enumerate(batch):
                sample, length = samples[s], len(samples[s].input_ids)
                originals[i, :length] = sample.input_ids
                word_ids[i, :length] = sample.word_ids
                attention[i, :length] = 1
                target[i, :length] = np.isin(sample.word_ids, plans[s][m]) & (sample.word_ids >= 0)
            input_ids = np.where(target, mask_token_id, originals)
            log_probs = masked_log_probs(model, torch.from_numpy(input_ids).to(device),
                                         torch.from_numpy(attention).to(device), torch.from_numpy(target).to(device))
            row_of, position_of = np.nonzero(target)  # row-major: the order of `log_probs`' rows
            originals, word_of = originals[row_of, position_of], word_ids[row_of, position_of]
            nll = -log_probs.gather(1, torch.from_numpy(originals).to(device)[:, None])[:, 0].double().cpu().numpy()
            guesses = log_probs.argmax(dim=-1).cpu().numpy()
            nll_per_row = np.bincount(row_of, weights=nll, minlength=len(batch))
            tokens_per_row = np.bincount(row_of, minlength=len(batch))
            for i, (s, m) in enumerate(batch):
                results[s].nll[m] = nll_per_row[i]
                results[s].tokens[m] = tokens_per_row[i]
            if with_predictions:
                _collect_words(results, batch, row_of, word_of, guesses, originals)
    finally:
        model.train(was_training)
    return results


def _collect_words(results, batch, row_of, word_of, guesses, originals) -> None:
    """Groups the masked tokens of each row by word (a word's subwords are consecutive) into WordPredictions."""
    for (i, word), tokens in groupby(range(len(row_of)), key=lambda t: (row_of[t], word_of[t])):
        tokens = list(tokens)
        s, m = batch[i]
        results[s].predictions[m].append(WordPrediction(int(word), tuple(guesses[tokens].tolist()),
                                                        tuple(originals[tokens].tolist())))
