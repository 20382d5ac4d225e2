"""Canary exposure (Carlini et al. 2019, "The Secret Sharer", section 4): how far the model singles out a planted
secret from every other value it could have had.

For a canary "The locker code is 04821." planted r times in a member's notes (ppmlm.corpus.canaries), every
string of the same number of digits is a candidate. Each candidate fills the masked secret slot of the canary's
own context and is scored as the inversion scores attributes (ppmlm.audit.inversion.slot_scores: summed
log-probabilities of its tokens, all masked at once). With rank the true secret's place among all |R| candidates
(1 + those scoring higher), exact over the whole space:

    exposure = log2 |R| - log2 rank      (0 bits: ranked last; log2 |R| bits: ranked first)

A model that has not memorised the canary ranks it anywhere, about log2 2 = 1 bit on average; memorisation pushes
it towards log2 |R|. ppmlm blacklists the secret (one user writes it: an indirect identifier) and should keep
exposure near chance; plain mlm should not. Only exposures and ranks are written; the secret stays in the run
directory's canaries.json.
"""
from __future__ import annotations

import math

from ppmlm.audit.inversion import candidate_tokens, slot_scores


def exposure_figures(model, tokenizer, canaries, batch_size: int = 16) -> dict | None:
    """Exposure of every canary (None when the run has none), by repetitions, with the bounds of the space."""
    if not canaries:
        return None
    digits = len(canaries[0].secret)
    space = [f"{value:0{digits}d}" for value in range(10 ** digits)]
    tokens = candidate_tokens(tokenizer, space)
    scores = slot_scores(model, tokenizer, [(canary.context, ".") for canary in canaries], tokens, batch_size)
    rows = []
    for canary, row in zip(canaries, scores):
        true = row[int(canary.secret)]
        rank = int((row > true).sum()) + 1
        rows.append({"repetitions": canary.repetitions, "rank": rank, "exposure": math.log2(len(space)) - math.log2(rank)})
    return {"candidates": len(space), "max_exposure": math.log2(len(space)), "canaries": rows,
            "highest_exposure": max(row["exposure"] for row in rows)}


def exposure_summary(canaries: dict | None) -> list[tuple[str, str]]:
    """(measure, value) rows for the report and the card: exposures only, never a secret."""
    if canaries is None:
        return [("Canary exposure (Carlini et al.)", "no canary planted (audit.canaries off, or auto in a run without DP-SGD)")]
    rows = sorted(canaries["canaries"], key=lambda row: row["repetitions"])
    return [(f"Canary exposure in bits (of at most {canaries['max_exposure']:.1f}; about 1.4 when not memorised), "
             f"canaries planted {' / '.join(str(row['repetitions']) for row in rows)} times",
             " / ".join(f"{row['exposure']:.2f}" for row in rows))]
