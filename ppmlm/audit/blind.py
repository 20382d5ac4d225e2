"""The blind baseline: can the audited members be told from the non-members without the model?

Membership attacks are only as honest as the split behind them. Das, Zhang & Tramèr (2024, "Blind Baselines Beat
Membership Inference Attacks for Foundation Models") showed published MIA successes that a classifier of the text
alone, never querying the model, matched or beat: members and non-members had been drawn differently (by date, in
Duan et al. 2024's temporal shift). ppmlm splits users by a hash of their id, which should be fair, but a team's
corpus may order or group users by admission date or by site; the audit proves the split on every corpus.

The classifier is TF-IDF over the chunks' words (unigrams and bigrams, case kept: a group that writes in capitals
is a group) and a logistic regression, cross-validated by user: the audited users are dealt into stratified folds,
and each user's audited chunks are scored by a model fit on all the chunks of the other folds' users, never on
their own. Its scores sit in the attack table as "blind (no model)", read like any attack's (AUC with a bootstrap
interval over users). When the interval lies above 0.5 at either level, the members differ from the non-members
in their text, and every membership attack's figure mixes that difference with what the model learnt: the verdict
says the split is not comparable and that the MIA figures overstate the risk.
"""
from __future__ import annotations

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline

BLIND = "blind"  # its key among the attacks of epoch-N.json
NAME = "blind (no model)"
FOLDS = 5


def words(sample) -> str:
    """A chunk's words (ppmlm.audit.sampling.Sample terms) as the classifier reads them."""
    return " ".join(term for term in sample.terms if term is not None)


def blind_scores(chunks: dict[str, list], samples: list, seed: int) -> list[float | None]:
    """One score per audited chunk in `samples` (higher: more like a member), from a classifier fit on every chunk
    (`chunks`, by user) of the users of the other folds; None for all when a side has fewer than two users."""
    users = sorted(chunks)
    labels = np.array([chunks[user][0].member for user in users])
    folds = min(FOLDS, int(labels.sum()), int((~labels).sum()))
    if folds < 2:
        return [None] * len(samples)
    fold_of = {}
    for fold, (_, held) in enumerate(StratifiedKFold(folds, shuffle=True, random_state=seed).split(users, labels)):
        fold_of.update({users[i]: fold for i in held})
    scores: list[float | None] = [None] * len(samples)
    for fold in range(folds):
        training = [chunk for user in users if fold_of[user] != fold for chunk in chunks[user]]
        held = [i for i, sample in enumerate(samples) if fold_of.get(sample.user) == fold]
        if not held:
            continue
        classifier = make_pipeline(TfidfVectorizer(token_pattern=r"\S+", ngram_range=(1, 2), lowercase=False,
                                                   sublinear_tf=True),
                                   LogisticRegression(class_weight="balanced", max_iter=1000))
        classifier.fit([words(chunk) for chunk in training], [chunk.member for chunk in training])
        for i, score in zip(held, classifier.decision_function([words(samples[i]) for i in held])):
            scores[i] = float(score)
    return scores


def split_comparable(figures: dict) -> bool | None:
    """False when the blind baseline's AUC interval lies wholly above 0.5 at sample or user level (the members can be
    told apart without the model), True when it does not, None when it was not run (audits from before it, too few
    users)."""
    levels = [result for result in ((figures.get("attacks") or {}).get(BLIND) or {}).values() if result]
    if not levels:
        return None
    return not any(result.get("auc_ci") and result["auc_ci"][0] > 0.5 for result in levels)


def split_verdict(figures: dict) -> str | None:
    """The sentence the verdict adds when the split is not comparable (None otherwise): counts and rates only."""
    if split_comparable(figures) is not False:
        return None
    blind = figures["attacks"][BLIND]
    shown = "; ".join(f"{level} level AUC {result['auc']:.2f} [{result['auc_ci'][0]:.2f}, {result['auc_ci'][1]:.2f}]"
                      for level, result in blind.items() if result and result.get("auc_ci"))
    return ("the split is not comparable: a classifier of the text alone, which never queries the model, tells the "
            f"audited members from the non-members ({NAME}: {shown}), so the membership attacks' figures overstate the "
            "risk (part of what they find is how the two groups' notes differ, not what the model learnt); audit "
            "members and non-members drawn alike")
