"""Empirical ε from one training run (Steinke, Nasr & Jagielski 2023, "Privacy auditing with one (1) training run").

The run planted m canaries, each trained on independently with probability 1/2 (ppmlm.corpus.canaries, mode one_run).
After training the audit scores every canary (higher: more likely trained on), guesses "in" for the k+ highest scores
and "out" for the k- lowest, and abstains on the rest. If training is (ε, δ)-DP for one canary (one chunk, or one
user under user-level DP), the number W of correct guesses among the r = k+ + k- made obeys the paper's Theorem 5.2,
in the form of its Corollary 5.4 for guesses in {-1, 0, +1}:

    P[W ≥ v] ≤ B(v) + 2mδ · max_{i = 1..v} (B(v - i) - B(v)) / i,     B(t) = P[Binomial(r, e^ε / (1 + e^ε)) ≥ t]

A run that made v correct guesses therefore refutes (ε, δ)-DP at confidence 1 - β whenever this bound is below β, and
the audit reports the largest such ε (0 when not even ε = 0 is refuted): a lower bound on the ε of the training that
holds with probability at least 1 - β whatever the scores. It is a lower bound from one run: it can show that an
accountant's ε is wrong, or that a model without DP leaks membership; it never proves privacy.

Which guesses are made is fixed before training (`audit.canaries.guesses`, recorded in canaries.json): each share s
of the canaries gives r = round(s m) guesses, half of them (rounded up) "in" on the highest scores and the rest "out"
on the lowest. With several shares the audit keeps the largest bound and pays for the choice: each is computed at
β / (number of shares), so by the union bound the one kept still holds at 1 - β.

A canary's score is the pseudo-log-likelihood of its sentence: the log-probability of each of its tokens, masked one at
a time with the others in view, summed. A canary is the whole sentence (its context of two random words and its secret
of random digits), and a model that trained on it expects all of it: on tiny models memorizing canaries this ranked the
trained ones better than the secret's tokens alone (all masked at once or one at a time, each less the mean over the
other canaries' secrets): 22-24 correct of 24 guesses over three seeds against 19-23 (tests/test_one_run.py's setting).
"""
from __future__ import annotations

import numpy as np
import torch
from scipy.optimize import brentq
from scipy.special import expit
from scipy.stats import binom

from ppmlm.audit.exposure import exposure_summary
from ppmlm.audit.scoring import masked_log_probs
from ppmlm.corpus.canaries import OneRunCanaries


def p_value(canaries: int, guesses: int, correct: int, epsilon: float, delta: float) -> float:
    """The bound above on P[W ≥ correct] for `guesses` guesses among `canaries` under (epsilon, delta)-DP."""
    if not 0 <= correct <= guesses <= canaries:
        raise ValueError(f"expected 0 <= correct <= guesses <= canaries, got {correct}, {guesses}, {canaries}")
    q = expit(epsilon)  # the accuracy of ε-DP randomized response: what one guess can reach
    tail = binom.sf(correct - 1, guesses, q)
    if delta == 0 or correct == 0:
        return min(1.0, float(tail))
    below = np.cumsum(binom.pmf(correct - 1 - np.arange(correct), guesses, q))  # P[v - i <= Binomial < v], i = 1..v
    slack = float(np.max(below / np.arange(1, correct + 1)))
    return min(1.0, float(tail) + 2 * canaries * delta * slack)


def epsilon_lower_bound(canaries: int, guesses: int, correct: int, delta: float, beta: float) -> float:
    """The largest ε that `correct` correct guesses refute at confidence 1 - beta (0 when none)."""
    def margin(epsilon):
        return p_value(canaries, guesses, correct, epsilon, delta) - beta

    if margin(0.0) >= 0:
        return 0.0
    high = 1.0
    while margin(high) < 0:  # ends: as ε grows one guess is right with probability 1, and B(v) reaches 1
        high *= 2
    return float(brentq(margin, 0.0, high, xtol=1e-10))


def guess_counts(share: float, canaries: int) -> tuple[int, int]:
    """(k+, k-) for one share of the canaries: round(share m) guesses (at least 1), "in" for the larger half."""
    guesses = min(canaries, max(1, round(share * canaries)))
    return (guesses + 1) // 2, guesses // 2


def guess(scores, included, k_plus: int, k_minus: int) -> int:
    """Correct guesses when the k+ highest scores are guessed in and the k- lowest out (ties in canary order, which
    the inclusion draw does not follow)."""
    guessed = guesses(scores, k_plus, k_minus)
    return sum((side == "in") == member for side, member in zip(guessed, included) if side != "abstain")


def guesses(scores, k_plus: int, k_minus: int) -> list[str]:
    """Each canary's guess: "in" for the k+ highest scores, "out" for the k- lowest, "abstain" for the rest."""
    order = np.argsort(-np.asarray(scores, dtype=float), kind="stable")
    sides = ["abstain"] * len(order)
    for rank, index in enumerate(order):
        if rank < k_plus:
            sides[index] = "in"
        elif rank >= len(order) - k_minus:
            sides[index] = "out"
    return sides


def bound_of_scores(scores, included, shares, delta: float, confidence: float) -> dict:
    """The one-run bound for canaries with these scores and inclusions: every share's guesses, and the largest bound
    among them, each at β / len(shares)."""
    canaries, beta = len(scores), round((1 - confidence) / len(shares), 12)
    choices = []
    for share in shares:
        k_plus, k_minus = guess_counts(share, canaries)
        correct = guess(scores, included, k_plus, k_minus)
        choices.append({"share": share, "k_plus": k_plus, "k_minus": k_minus, "guesses": k_plus + k_minus,
                        "correct": correct,
                        "epsilon": epsilon_lower_bound(canaries, k_plus + k_minus, correct, delta, beta)})
    best = max(choices, key=lambda choice: choice["epsilon"])
    ceiling = max(epsilon_lower_bound(canaries, c["guesses"], c["guesses"], delta, beta) for c in choices)
    return {"epsilon": best["epsilon"], "guesses": best["guesses"], "correct": best["correct"],
            "k_plus": best["k_plus"], "k_minus": best["k_minus"], "choices": choices, "beta_per_choice": beta,
            "highest_possible": ceiling}


@torch.inference_mode()
def canary_scores(model, tokenizer, canaries, batch_size: int = 16) -> np.ndarray:
    """Each canary's score (see the module's docstring): one masked copy of its sentence per token."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    rows = []  # (canary, token ids, position masked)
    for index, canary in enumerate(canaries):
        ids = tokenizer(canary.sentence)["input_ids"]
        special = set(tokenizer.all_special_ids)
        rows += [(index, ids, position) for position, token in enumerate(ids) if token not in special]
    scores = np.zeros(len(canaries))
    try:
        for begin in range(0, len(rows), batch_size):
            batch = rows[begin : begin + batch_size]
            width = max(len(ids) for _, ids, _ in batch)
            input_ids = torch.full((len(batch), width), tokenizer.pad_token_id)
            attention = torch.zeros((len(batch), width), dtype=torch.long)
            slots = torch.zeros((len(batch), width), dtype=torch.bool)
            for row, (_, ids, position) in enumerate(batch):
                input_ids[row, : len(ids)] = torch.tensor(ids)
                attention[row, : len(ids)] = 1
                slots[row, position] = True
            truth = input_ids[slots].clone()
            input_ids[slots] = tokenizer.mask_token_id
            log_probs = masked_log_probs(model, input_ids.to(device), attention.to(device), slots.to(device))
            picked = log_probs[torch.arange(len(batch), device=device), truth.to(device)].double().cpu().numpy()
            for (index, _, _), value in zip(batch, picked):
                scores[index] += value
    finally:
        model.train(was_training)
    return scores


def one_run_figures(model, tokenizer, plant, epsilon: dict | None, confidence: float, pseudonym,
                    batch_size: int = 16) -> tuple[dict | None, list[dict]]:
    """The `empirical_epsilon` block of epoch-N.json and the canaries' score rows (pseudonymous, never a secret), for
    a run with a one-run plant (ppmlm.corpus.canaries.OneRunCanaries; None or exposure canaries: none). `epsilon` is
    the accountant's ε of a DP checkpoint (with its delta and unit), shown beside the bound."""
    if not isinstance(plant, OneRunCanaries):
        return None, []
    scores = canary_scores(model, tokenizer, plant.canaries, batch_size)
    included = [canary.included for canary in plant.canaries]
    accountant = {name: value for name, value in (epsilon or {}).items() if name not in ("delta", "unit")} or None
    delta = (epsilon or {}).get("delta") or plant.delta
    bound = bound_of_scores(scores, included, plant.guesses, delta, confidence)
    figures = {**bound, "confidence": confidence, "delta": delta, "unit": (epsilon or {}).get("unit") or plant.unit,
               "canaries": len(plant.canaries), "included": sum(included), "copies": plant.copies,
               "accountant": accountant,
               "method": "Steinke, Nasr & Jagielski 2023, Corollary 5.4; score: the canary sentence's pseudo-log-likelihood"}
    sides = guesses(scores, bound["k_plus"], bound["k_minus"])
    rows = [{"canary": pseudonym("canary", canary.user), "member": int(canary.included), "score": float(score),
             "guess": side} for canary, score, side in zip(plant.canaries, scores, sides)]
    return figures, rows


def one_run_summary(figures: dict) -> list[tuple[str, str]]:
    """(measure, value) rows for the report and the card: the bound beside the accountant's ε, counts only."""
    bound = figures.get("empirical_epsilon")
    if not bound:
        return []
    accountant = bound.get("accountant")
    beside = ("accountant's ε " + ", ".join(f"{value:.3g} ({name.upper()})" for name, value in accountant.items())
              if accountant else "no DP-SGD: no accountant's ε to compare with")
    return [(f"Empirical ε from one run (Steinke et al. 2023): lower bound at {bound['confidence']:.0%} confidence, per "
             f"{bound['unit']}, δ = {bound['delta']:g}",
             f"{bound['epsilon']:.3f} ({beside}; {bound['canaries']} canaries, {bound['included']} trained on; "
             f"{bound['correct']} of {bound['guesses']} guesses correct; at most {bound['highest_possible']:.2f} "
             "with every guess correct)")]


def one_run_text(bound: dict) -> str:
    """The bound for an audit's console line: counts and figures only."""
    accountant = bound.get("accountant")
    beside = (", ".join(f"{value:.2f} {name.upper()}" for name, value in accountant.items()) if accountant
              else "none: no DP-SGD")
    return (f"empirical ε ≥ {bound['epsilon']:.2f} per {bound['unit']} ({bound['correct']} of {bound['guesses']} guesses "
            f"right, {bound['canaries']} canaries; accountant's ε {beside})")


def canary_summary(figures: dict) -> list[tuple[str, str]]:
    """The canaries' rows of the report and the card: the one-run bound beside the accountant's ε for a run with one-run
    canaries, else the exposures of its exposure canaries (or that it planted none)."""
    return one_run_summary(figures) if figures.get("empirical_epsilon") else exposure_summary(figures.get("canaries"))
