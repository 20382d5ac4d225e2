"""Membership scores of every attack, per sample and per user, and the figures read from their ROC curves.

Scores follow one convention: higher means "more likely a member".
- loss (Yeom et al.; Jagannatha et al.'s S-BBA and P-BBA): minus the target model's masked-LM loss.
- likelihood_ratio (Mireshghallah et al.): E_reference(s) - E_target(s), minus their test statistic.
- identifier_count (Boutet et al., 5.4): how many of a user's indirect identifiers the model predicts.
- identifier_share: the same count over the user's number of indirect identifiers, so that users with
  more text do not look more like members.
- rmia (Zarifzadeh et al., ppmlm.audit.rmia): the share of population chunks whose likelihood ratio against
  the reference model the sample's dominates.
- neighbourhood (Mattern et al., ppmlm.audit.neighbourhood): the mean loss of neighbours made by swapping a
  word for the model's own guess, minus the sample's loss.
- blind (ppmlm.audit.blind): no attack on the model but a check of the split: a classifier of the text alone,
  cross-validated by user. Not a check of the sharing policy's TPR bounds: it says whether the others can be read.
A user's sample-level scores are the means over their samples that have one (Jagannatha et al.'s groups).
"""
from __future__ import annotations

from ppmlm.audit.blind import BLIND
from ppmlm.audit.roc import roc_figures

SAMPLE_ATTACKS = ("loss", "likelihood_ratio", "rmia", "neighbourhood")
USER_ATTACKS = ("loss", "likelihood_ratio", "rmia", "neighbourhood", "identifier_count", "identifier_share")
MODEL_FREE = (BLIND,)  # scored per sample without the model (ppmlm.audit.blind), read like the sample attacks


def attack_figures(rows: list[dict], attack: str, config) -> dict | None:
    """AUC, TPR at each FPR level and best advantage of `<attack>_score` over rows with a `member` label, with
    bootstrap intervals over the rows' users (`config`: an AuditConfig); None when the attack has no score
    (no reference model, no population chunk, no neighbour) or a class is missing."""
    scored = [row for row in rows if row.get(f"{attack}_score") is not None]
    labels = [int(row["member"]) for row in scored]
    if sum(labels) in (0, len(labels)):
        return None
    return roc_figures([row[f"{attack}_score"] for row in scored], labels, [row["user"] for row in scored],
                       config.fpr_levels, config.bootstrap_resamples, config.confidence, config.seed)


def all_attack_figures(sample_rows: list[dict], user_rows: list[dict], config) -> dict:
    return {
        attack: {
            **({"sample": attack_figures(sample_rows, attack, config)} if attack in SAMPLE_ATTACKS else {}),
            "user": attack_figures(user_rows, attack, config),
        }
        for attack in USER_ATTACKS
    } | {attack: {level: attack_figures(rows, attack, config) for level, rows in (("sample", sample_rows), ("user", user_rows))}
         for attack in MODEL_FREE}


def user_rows_from_samples(sample_rows: list[dict], identifier_scores: dict[str, tuple[int, int, float]]) -> list[dict]:
    """One row per user: mean sample scores, and (identifiers, predicted, share) of the identifier attack."""
    by_user: dict[str, list[dict]] = {}
    for row in sample_rows:
        by_user.setdefault(row["user"], []).append(row)
    rows = []
    for user, samples in by_user.items():
        identifiers, predicted, share = identifier_scores[user]
        row = {"user": user, "member": samples[0]["member"], "samples": len(samples)}
        for attack in SAMPLE_ATTACKS + MODEL_FREE:
            values = [s[f"{attack}_score"] for s in samples if s.get(f"{attack}_score") is not None]
            row[f"{attack}_score"] = sum(values) / len(values) if values else None
        row.update(identifiers=identifiers, identifiers_predicted=predicted,
                   identifier_count_score=predicted, identifier_share_score=share)
        rows.append(row)
    return rows


def with_interval(value: float | None, interval, digits: int = 3) -> str:
    """A figure as the report and the card print it: `0.720 [0.550, 0.880]`, or n/a."""
    if value is None:
        return "n/a"
    return f"{value:.{digits}f}" + (f" [{interval[0]:.{digits}f}, {interval[1]:.{digits}f}]" if interval else "")


def tpr_text(result: dict, level: str) -> str:
    """The TPR of an attack's figures at FPR `level` (a key of `tpr_at_fpr`), with its interval, or why the
    audit could not resolve it: never a number it cannot support."""
    unresolved = (result.get("unresolved") or {}).get(level)
    if unresolved:
        return f"not resolved (needs ≥ {unresolved['needs_non_members']} non-members)"
    return with_interval(result["tpr_at_fpr"].get(level), (result.get("tpr_at_fpr_ci") or {}).get(level))
