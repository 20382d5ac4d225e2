"""Membership scores of every attack, per sample and per user, and the figures read from their ROC curves.

Scores follow one convention: higher means "more likely a member".
- loss (Yeom et al.; Jagannatha et al.'s S-BBA and P-BBA): minus the target model's masked-LM loss.
- likelihood_ratio (Mireshghallah et al.): E_reference(s) - E_target(s), minus their test statistic.
- identifier_count (Boutet et al., 5.4): how many of a user's indirect identifiers the model predicts.
- identifier_share: the same count over the user's number of indirect identifiers, so that users with
  more text do not look more like members.
A user's loss and likelihood-ratio scores are the means over their samples (Jagannatha et al.'s groups).
"""
from __future__ import annotations

from ppmlm.audit.metrics import load_metric

SAMPLE_ATTACKS = ("loss", "likelihood_ratio")
USER_ATTACKS = ("loss", "likelihood_ratio", "identifier_count", "identifier_share")


def attack_figures(rows: list[dict], attack: str, levels) -> dict | None:
    """AUC, TPR at each FPR level and best advantage of `<attack>_score` over rows with a `member` label;
    None when the attack has no score (no reference model) or a class is missing."""
    scored = [row for row in rows if row.get(f"{attack}_score") is not None]
    scores = [row[f"{attack}_score"] for row in scored]
    labels = [int(row["member"]) for row in scored]
    members = sum(labels)
    if members == 0 or members == len(labels):
        return None
    return {
        "auc": load_metric("roc_auc").compute(predictions=scores, references=labels)["roc_auc"],
        "tpr_at_fpr": load_metric("tpr_at_fpr").compute(predictions=scores, references=labels, levels=levels)["tpr_at_fpr"],
        "advantage": load_metric("advantage").compute(predictions=scores, references=labels)["advantage"],
        "members": members,
        "non_members": len(labels) - members,
    }


def all_attack_figures(sample_rows: list[dict], user_rows: list[dict], levels) -> dict:
    return {
        attack: {
            **({"sample": attack_figures(sample_rows, attack, levels)} if attack in SAMPLE_ATTACKS else {}),
            "user": attack_figures(user_rows, attack, levels),
        }
        for attack in USER_ATTACKS
    }


def user_rows_from_samples(sample_rows: list[dict], identifier_scores: dict[str, tuple[int, int, float]]) -> list[dict]:
    """One row per user: mean sample scores, and (identifiers, predicted, share) of the identifier attack."""
    by_user: dict[str, list[dict]] = {}
    for row in sample_rows:
        by_user.setdefault(row["user"], []).append(row)
    rows = []
    for user, samples in by_user.items():
        identifiers, predicted, share = identifier_scores[user]
        row = {"user": user, "member": samples[0]["member"], "samples": len(samples)}
        for attack in SAMPLE_ATTACKS:
            values = [s[f"{attack}_score"] for s in samples if s[f"{attack}_score"] is not None]
            row[f"{attack}_score"] = sum(values) / len(values) if values else None
        row.update(identifiers=identifiers, identifiers_predicted=predicted,
                   identifier_count_score=predicted, identifier_share_score=share)
        rows.append(row)
    return rows
