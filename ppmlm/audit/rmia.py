"""Reference-calibrated membership inference with one reference model, after RMIA (Zarifzadeh et al. 2024,
"Low-Cost High-Power Membership Inference Attacks"), for masked LMs.

RMIA asks how much more likely the target model makes a sample than a model that did not train on it would,
relative to how much more likely it makes samples of the population:

    ratio(x)  = Pr(x | θ) / Pr(x)
    score(x)  = share of population samples z with ratio(x) / ratio(z) >= γ

Pr(x), the probability of x under models that did or did not train on it, is estimated from our single
reference model (trained without x) with the paper's offline correction: a model that trains on x gives it
about a·Pr_out(x) + (1 - a), so the average over in and out models is

    Pr(x) = (1 + a) / 2 · Pr(x | θ_reference) + (1 - a) / 2.

For a masked LM, Pr(x | θ) is the pseudo-likelihood per masked token over the audit's K maskings of x,
exp(-loss), with loss the mean over maskings of the masked tokens' mean negative log-likelihood (the loss
attack's). Per token rather than the whole chunk's product: a chunk's product is a vanishing number that the
additive (1 - a) / 2 would swamp, while a token's probability lies where the correction was made for. Target
and reference see the same maskings, as in the likelihood-ratio attack: a sample's K, and a population chunk's
`rmia_population_maskings` (fewer, to bound the cost: z only sets the scale of the score, see docs/audit.md).

The population samples z are chunks that neither model trained on and that the audit does not score:
the chunks of the audited non-member users (audit non-members and population users lent to them) left out by
the per-user budget, at most `rmia_population_chunks` of them in a seeded choice. A sample is never compared
with a chunk of its own user (nor with itself): a non-member's other chunks are not population to it.
"""
from __future__ import annotations

import numpy as np
import torch

from ppmlm.audit.sampling import Sample


def population_samples(chunks: dict[str, list[Sample]], scored: list[Sample], limit: int,
                       generator: torch.Generator) -> list[Sample]:
    """The population chunks z: non-member users' chunks that are not scored, at most `limit` (a seeded choice,
    in a stable order)."""
    taken = {(s.doc_id, s.chunk) for s in scored}
    spare = [s for samples in chunks.values() for s in samples if not s.member and (s.doc_id, s.chunk) not in taken]
    if len(spare) <= limit:
        return spare
    return [spare[i] for i in sorted(torch.randperm(len(spare), generator=generator)[:limit].tolist())]


def log_ratio(loss: float, reference_loss: float, offline_a: float) -> float:
    """log Pr(x | θ) - log Pr(x): per-token pseudo-likelihoods exp(-loss), Pr(x) by the offline correction."""
    return -loss - float(np.logaddexp(np.log((1 + offline_a) / 2) - reference_loss,
                                      np.log((1 - offline_a) / 2) if offline_a < 1 else -np.inf))


def rmia_scores(log_ratios, users, population_log_ratios, population_users, gamma: float) -> list[float | None]:
    """Each sample's share of the population chunks of other users that it dominates (ratio at least γ times
    theirs); None for a sample without a log ratio (no reference) or without such a chunk."""
    population = np.asarray(population_log_ratios, dtype=np.float64)
    population_users = np.asarray(population_users, dtype=object)
    scores = []
    for value, user in zip(log_ratios, users):
        others = population[population_users != user] if value is not None else ()
        scores.append(float(np.mean(value - others >= np.log(gamma))) if len(others) else None)
    return scores
