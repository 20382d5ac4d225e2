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
interval over users). When the interval lies above 0.5 at either level, and the users' scores separate members from
non-members by an exact one-sided Mann-Whitney test at 1 - confidence (a bootstrap over five users can read a lucky
ordering as an interval of [1, 1]; the test knows that 3 members above 2 non-members happens one time in ten by
chance), the members differ from the non-members in their text, and every membership attack's figure mixes that
difference with what the model learnt: the verdict says the split is not comparable and that the MIA figures
overstate the risk.
"""
from __future__ import annotations

import numpy as np
from scipy.stats import mannwhitneyu
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


def users_separated(user_rows: list[dict]) -> float | None:
    """The p-value of the exact one-sided Mann-Whitney test that the members' blind scores (user means) are drawn
    above the non-members' (None when a side has no score): users are the independent units the split draws."""
    scores = {member: [row[f"{BLIND}_score"] for row in user_rows
                       if row["member"] == member and row.get(f"{BLIND}_score") is not None] for member in (1, 0)}
    if not scores[1] or not scores[0]:
        return None
    return float(mannwhitneyu(scores[1], scores[0], alternative="greater").pvalue)


def split_comparable(figures: dict) -> bool | None:
    """False when the blind baseline's AUC interval lies wholly above 0.5 at sample or user level and the users'
    separation is significant at 1 - confidence (the members can be told apart without the model), True when not,
    None when it was not run (audits from before it, too few users)."""
    blind = (figures.get("attacks") or {}).get(BLIND) or {}
    levels = [result for result in blind.values() if result]
    if not levels:
        return None
    above = any(result.get("auc_ci") and result["auc_ci"][0] > 0.5 for result in levels)
    p_value = (blind.get("user") or {}).get("p_value")
    significant = p_value is None or p_value < 1 - (figures.get("config") or {}).get("confidence", 0.95)
    return not (above and significant)


def split_verdict(figures: dict) -> str | None:
    """The sentence the verdict adds when the split is not comparable (None otherwise): counts and rates only."""
    if split_comparable(figures) is not False:
        return None
    blind = figures["attacks"][BLIND]
    shown = "; ".join(f"{level} level AUC {result['auc']:.2f} [{result['auc_ci'][0]:.2f}, {result['auc_ci'][1]:.2f}]"
                      for level, result in blind.items() if result and result.get("auc_ci"))
    if blind.get("user") and blind["user"].get("p_value") is not None:
        shown += f"; users separated at p = {blind['user']['p_value']:.2g}"
    return ("the split is not comparable: a classifier of the text alone, which never queries the model, tells the "
            f"audited members from the non-members ({NAME}: {shown}), so the membership attacks' figures overstate the "
            "risk (part of what they find is how the members' notes differ from the non-members', not what the model "
            "learnt); audit "
            "members and non-members drawn alike")
