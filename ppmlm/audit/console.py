"""What the audit says on the console: one line per audited epoch, and the sharing policy's verdict at the end.

A figure printed bare reads as a finding: "user-level AUC 0.20" from five non-members is not one. So every figure
on the epoch line carries its interval, and a TPR the audited non-members cannot resolve is printed as such. The
run (and `ppmlm audit`) ends with the verdict that opens report.html, the reasons behind it, and what would resolve
an inconclusive one. Counts and rates only: never a term, a user or a document id.
"""
from __future__ import annotations

import math
from pathlib import Path

from ppmlm.audit.one_run import one_run_text
from ppmlm.audit.policy import FAIL, FPR, INCONCLUSIVE, NOT_MEASURED, NOT_RESOLVED, Check, SharingPolicy, outcome

FPR_TEXT = f"{float(FPR):.0%}"  # the FPR level the policy bounds, as people write it: 1%


def interval_text(value: float | None, interval, digits: int) -> str:
    """`0.20 [0.00, 0.52]`; `n/a` when not measured; the value marked when the audit computed no interval."""
    if value is None:
        return "n/a"
    if interval is None:
        return f"{value:.{digits}f} (no interval)"
    return f"{value:.{digits}f} [{interval[0]:.{digits}f}, {interval[1]:.{digits}f}]"


def epoch_line(figures: dict, out_dir: Path) -> str:
    """One line per audited epoch: utility, privacy and the user-level attacks, each with its interval, and the
    policy's TPR at 1% FPR measured or not resolved (with the non-members it needs)."""
    utility, privacy = figures["utility"], figures["privacy"]
    parts = [f"utility {interval_text(utility['masked_word_accuracy'], utility.get('masked_word_accuracy_ci'), 3)}",
             f"privacy {interval_text(privacy['score'], privacy.get('score_ci'), 4)} ({privacy['leaked']} of "
             f"{privacy['identifiers']} identifiers predicted)"]
    independent = figures.get("privacy_independent")
    if independent:
        missed = independent["missed_by_blacklist"]
        parts.append(f"independent identifiers {interval_text(independent['score'], independent.get('score_ci'), 4)} "
                     f"(of the {missed['identifiers']} the blacklist missed, {missed['leaked']} predicted)")
    users = [(attack, levels["user"]) for attack, levels in figures["attacks"].items() if levels.get("user") is not None]
    if users:
        sizes = {(result["members"], result["non_members"]) for _, result in users}
        size = ", ".join(f"{members} members / {non_members} non-members" for members, non_members in sorted(sizes))
        aucs = ", ".join(f"{attack.replace('_', ' ')} {interval_text(result['auc'], result.get('auc_ci'), 2)}"
                         for attack, result in users)
        parts.append(f"user-level MIA ({size}): AUC {aucs}; TPR at {FPR_TEXT} FPR {tpr_text(users)}")
    else:
        parts.append("user-level MIA: n/a")
    if figures.get("empirical_epsilon"):
        parts.append(one_run_text(figures["empirical_epsilon"]))
    not_run = "".join(f"; {attack.replace('_', ' ')} not run: {reason}"
                      for attack, reason in (figures.get("attacks_not_run") or {}).items())
    return (f"audit epoch {figures['epoch']}: {', '.join(parts)}{not_run} "
            f"[{figures['seconds']:.0f}s, {Path(out_dir) / 'report.html'}]")


def tpr_text(users: list[tuple[str, dict]]) -> str:
    """The attacks' TPR at the policy's FPR level with intervals; once for all when none of them is resolved."""
    unresolved = [(result.get("unresolved") or {}).get(FPR) for _, result in users]
    if all(unresolved):
        return f"not resolved (needs ≥ {max(cell['needs_non_members'] for cell in unresolved)} non-members)"
    return ", ".join(f"{attack.replace('_', ' ')} "
                     + (f"not resolved (needs ≥ {cell['needs_non_members']} non-members)" if cell else
                        interval_text(result["tpr_at_fpr"].get(FPR), (result.get("tpr_at_fpr_ci") or {}).get(FPR), 2))
                     for (attack, result), cell in zip(users, unresolved))


def verdict_lines(figures: dict, policy: SharingPolicy | None = None) -> list[str]:
    """The verdict of `policy` (None: the defaults) on an epoch's figures, as report.html opens with it, with its
    reasons; then, when a larger or finer audit would resolve something, what to change, one line each."""
    checks = (policy or SharingPolicy()).check(figures)
    verdict = outcome(checks)
    reasons = _reasons(checks, figures)
    head = f"verdict on epoch {figures['epoch']}: {verdict}"
    lines = [f"{head}: {'; '.join(reasons)}" if reasons else f"{head}: every check of the sharing policy passes"]
    remedies = _remedies(checks, figures)
    if remedies:
        lines += ["to resolve it:", *(f"  - {remedy}" for remedy in remedies)]
    return lines


def _level(check: Check) -> str:
    return "sample" if check.figure.endswith("(sample)") else "user"


def _reasons(checks: list[Check], figures: dict) -> list[str]:
    audited = figures["audited"]
    reasons = [check.describe() for check in checks if check.status in (FAIL, NOT_MEASURED)]
    for level, count in (("user", f"{audited['non_member_users']} non-members"),
                         ("sample", f"their {audited['non_member_samples']} chunks")):
        needs = [c.needs for c in checks if c.status == NOT_RESOLVED and _level(c) == level]
        if needs:
            reasons.append(f"{count} resolve no TPR at {FPR_TEXT} FPR{' at sample level' if level == 'sample' else ''} "
                           f"(needs ≥ {max(needs)})")
    privacy = [c for c in checks if c.status == INCONCLUSIVE and c.at_least]
    if privacy:
        threshold = min(c.threshold for c in privacy)
        reasons.append(f"{privacy[0].figure.split(' (')[0]} interval reaches below {threshold:g} ("
                       + ", ".join(f"{c.figure.split('(')[-1].rstrip(')') if '(' in c.figure else 'overall'} "
                                   f"[{c.interval[0]:.4f}, {c.interval[1]:.4f}]" for c in privacy if c.interval) + ")")
    reasons += [f"{c.figure} interval [{c.interval[0]:.2f}, {c.interval[1]:.2f}] reaches above {c.threshold:g}"
                for c in checks if c.status == INCONCLUSIVE and not c.at_least and c.interval]
    if any(c.status == FAIL for c in checks):
        reasons.append("a FAIL is measured, not a matter of sample size: a larger audit will not make it pass")
    return reasons


def identifiers_for_threshold(threshold: float, confidence: float) -> int | None:
    """Identifiers an audit must hold, none of them predicted, for the lower end of the privacy score's exact
    binomial interval to reach `threshold`, (1 - confidence) / 2 = threshold ** n; None when no count does."""
    if threshold >= 1:
        return None
    return max(1, math.ceil(math.log((1 - confidence) / 2) / math.log(threshold))) if threshold > 0 else 1


def _remedies(checks: list[Check], figures: dict) -> list[str]:
    """What would resolve the checks that are not resolved or inconclusive: more users (or population users lent to
    the non-member side), and every chunk of the audited users instead of a budget of tokens each."""
    audited, confidence = figures["audited"], (figures.get("config") or {}).get("confidence", 0.95)
    unresolved = {_level(c): c.needs for c in checks if c.status == NOT_RESOLVED}
    privacy = [c for c in checks if c.status == INCONCLUSIVE and c.at_least]
    users, chunks = [], []
    if "user" in unresolved:
        users.append(f"≥ {unresolved['user']} non-member users resolve TPR at {FPR_TEXT} FPR, this audit had "
                     f"{audited['non_member_users']} of {audited['non_member_users_available']} available")
    if "sample" in unresolved:
        available = audited.get("non_member_chunks_available") or 0
        (chunks if available >= unresolved["sample"] else users).append(
            f"≥ {unresolved['sample']} non-member chunks resolve it at sample level"
            + (f" ({available} instead of {audited['non_member_samples']})" if available >= unresolved["sample"] else ""))
    if privacy:
        threshold = min(c.threshold for c in privacy)
        needed = identifiers_for_threshold(threshold, confidence)
        scores = figures.get("privacy") or {}
        counts = ", ".join(f"{(scores.get(kind) or {}).get('identifiers', 'n/a')} {kind}" for kind in ("direct", "indirect"))
        clears = (f"the privacy score's interval clears {threshold:g} only over ≥ {needed} identifiers of each kind, none "
                  f"predicted; this audit had {scores.get('identifiers', 'n/a')} ({counts})" if needed else
                  f"no count of identifiers makes the privacy score's interval clear {threshold:g}")
        users.append(clears)
        available = audited.get("member_chunks_available")
        if available is None or available > audited["member_samples"]:  # else every member chunk is audited already
            chunks.append(f"more identifiers: {available or 'all'} member chunks instead of {audited['member_samples']}")
    if any(c.status == INCONCLUSIVE and not c.at_least for c in checks):
        users.append("narrower attack intervals")
    remedies = []
    if users:
        remedies.append(f"more users ({'; '.join(users)}): a larger corpus (data.synth_users for the embedded one) or a "
                        "larger data.audit_fraction")
    if "user" in unresolved or "sample" in unresolved:
        remedies.append("audit.lend_population=N (ppmlm audit --lend-population N) lends N population users to the "
                        "non-member side")
    if chunks:
        remedies.append("--max-tokens 0 (ppmlm audit; audit.max_tokens_per_user=null in training) audits every chunk of "
                        f"the audited users ({'; '.join(chunks)})")
    if any(c.status == NOT_MEASURED for c in checks):
        remedies.append("run the attacks that did not run (see why above), or set their threshold to null under share: "
                        "in the run's config")
    return remedies
