"""report.html: one self-contained page (plots embedded as PNG) over every epoch of an audit directory.

It reads only what the audit wrote (epoch-N.json and the latest epoch's scores files), so it holds
counts, rates and curves, never a term or a user id.
"""
from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from ppmlm.audit.attacks import MODEL_FREE, SAMPLE_ATTACKS, USER_ATTACKS, tpr_text, with_interval
from ppmlm.audit.blind import BLIND, NAME, split_comparable, split_verdict
from ppmlm.audit.inversion import inversion_summary
from ppmlm.audit.occurrences import privacy_summary
from ppmlm.audit.one_run import canary_summary
from ppmlm.audit.outputs import read_epochs, read_jsonl, scores_paths, write_atomically
from ppmlm.audit.policy import SharingPolicy, outcome
from ppmlm.audit.roc import roc_curve
from ppmlm.audit.warm_start import warm_start_summary

ATTACK_NAMES = {
    "loss": "Loss (Yeom; Jagannatha)",
    "likelihood_ratio": "Likelihood ratio (Mireshghallah)",
    "rmia": "Reference-calibrated (RMIA, Zarifzadeh)",
    "neighbourhood": "Neighbourhood (Mattern)",
    "identifier_count": "Identifier count (Boutet)",
    "identifier_share": "Identifier share",
    BLIND: NAME,
}

STYLE = """body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222;line-height:1.4}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:4px 8px;text-align:right}
th{background:#eee}td.name{text-align:left}img{max-width:100%;border:1px solid #ddd;margin:.5em 0}
.note{color:#555;font-size:.9em}"""


def write_report(out_dir, policy: SharingPolicy | None = None) -> Path:
    """(Re)writes out_dir/report.html from the epochs present, opening with the verdict of `policy` (the
    run's sharing policy; None: the defaults) on the latest epoch; returns its path."""
    out_dir = Path(out_dir)
    epochs = read_epochs(out_dir)
    if not epochs:
        raise FileNotFoundError(f"{out_dir}: no epoch-N.json to report on")
    latest = epochs[-1]
    samples_path, users_path = scores_paths(out_dir, latest["epoch"])
    sample_rows = read_jsonl(samples_path) if samples_path.exists() else []
    user_rows = read_jsonl(users_path) if users_path.exists() else []
    sections = [
        "<h1>Privacy audit</h1>" + _verdict_section(latest, policy or SharingPolicy()),
        f"<p>Latest audited epoch: {latest['epoch']}. Model: <code>{_text(latest.get('model') or 'given in memory')}</code>. "
        f"Reference model of the likelihood-ratio and RMIA attacks: <code>{_text(latest.get('reference') or 'none')}</code>.</p>"
        "<p class=note>This report counts identifiers; it never shows one. Scores files beside it hold "
        "pseudonymous ids and membership labels: they are sensitive too.</p>",
        "<h2>Summary</h2>" + _summary_table(latest),
        "<h2>Membership inference: ROC curves (log-log)</h2>"
        "<p class=note>True-positive rate against false-positive rate of each attack, members against audit "
        "non-members. The diagonal is a blind guess; what matters is the left part: members found with "
        "almost no false accusation.</p>" + _image(_roc_figure(sample_rows, user_rows), "ROC curves of the attacks"),
        "<h2>Privacy and utility per epoch</h2>" + _image(_epochs_figure(epochs), "privacy and utility per epoch"),
        "<h2>Leaked identifiers against their training frequency</h2>"
        "<p class=note>One point per identifier the model predicted while the auditor masked the training "
        "chunks: how often it occurs in training against how often the model produced it.</p>"
        + _image(_regurgitation_figure(latest), "leaked identifiers against training frequency"),
        "<h2>Audited sizes</h2>" + _sizes_table(latest),
    ]
    page = (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>ppmlm privacy audit</title>"
            f"<style>{STYLE}</style></head><body>{''.join(sections)}</body></html>\n")
    path = out_dir / "report.html"
    write_atomically(path, page)
    return path


def _text(value) -> str:
    return html.escape(str(value))


def _verdict_section(figures: dict, policy: SharingPolicy) -> str:
    """What an auditor reads first: the sharing policy's verdict on this epoch, check by check with
    intervals, and what the audit could not resolve."""
    checks = policy.check(figures)
    rows = "".join(f"<tr><td class=name>{_text(c.figure)}</td><td>{_text(c.measured)}</td><td>{_text(c.requirement)}</td>"
                   f"<td class=name>{_text(c.status)}</td></tr>" for c in checks)
    unresolved = sorted({(level, cell["needs_non_members"]) for attack in figures["attacks"].values()
                         for result in attack.values()
                         if result for level, cell in (result.get("unresolved") or {}).items()}, key=lambda item: item[1])
    audited = figures["audited"]
    resolution = ("Every FPR level is resolved." if not unresolved else
                  "Not resolved: " + "; ".join(f"TPR at FPR {float(level):.1%} where fewer than {needs} non-members were "
                                               "audited" for level, needs in unresolved)
                  + f" ({audited['non_member_users']} non-member users, {audited['non_member_samples']} chunks). "
                  "These cells are unknown, not zero.")
    split = "; the split is not comparable: the MIA figures overstate the risk" if split_comparable(figures) is False else ""
    return (f"<h2 id=verdict>Verdict of the sharing policy on epoch {figures['epoch']}: {_text(outcome(checks) + split)}</h2>"
            "<p class=note>A check passes only when the figure's whole interval meets the threshold; an interval across "
            "it is inconclusive; a level the audit cannot resolve is unknown. <code>ppmlm push</code> also checks that "
            "this audit was measured on the weights it shares.</p>"
            f"<table id=checks><thead><tr><th>Check</th><th>Measured</th><th>Required</th><th>Result</th></tr></thead>"
            f"<tbody>{rows}</tbody></table><p>{_text(resolution)}</p>" + _split_note(figures))


def _split_note(figures: dict) -> str:
    """The verdict's warning when members and non-members differ without the model (ppmlm.audit.blind)."""
    note = split_verdict(figures)
    return f"<p id=split><strong>Members and non-members: {_text(note)}.</strong></p>" if note else ""


def _summary_table(figures: dict) -> str:
    privacy, utility = figures["privacy"], figures["utility"]
    head = [
        ("Utility: masked whole-word accuracy, non-members",
         with_interval(utility.get("masked_word_accuracy"), utility.get("masked_word_accuracy_ci"))),
        ("Masked whole-word accuracy, members",
         with_interval(utility.get("member_masked_word_accuracy"), utility.get("member_masked_word_accuracy_ci"))),
        ("Privacy: share of identifiers never predicted", with_interval(privacy["score"], privacy.get("score_ci"), 4)),
        ("Identifiers predicted / audited (direct; indirect)",
         f"{privacy['leaked']} / {privacy['identifiers']} ({privacy['direct']['leaked']} / {privacy['direct']['identifiers']}; "
         f"{privacy['indirect']['leaked']} / {privacy['indirect']['identifiers']})"),
    ]
    independent = figures.get("privacy_independent")
    if independent:
        missed = independent["missed_by_blacklist"]
        head += [
            (f"Privacy against independent identifiers ({independent['source']})",
             with_interval(independent["score"], independent.get("score_ci"), 4)
             + f" ({independent['leaked']} of {independent['identifiers']} predicted)"),
            ("Independent identifiers missed by the training blacklist / of those predicted by the model",
             f"{missed['identifiers']} / {missed['leaked']}"),
            *((f"Independent identifiers, category {label}: predicted / audited", f"{share['leaked']} / {share['identifiers']}")
              for label, share in (independent.get("by_label") or {}).items()),
        ]
    head += [*privacy_summary(figures), *inversion_summary(figures.get("inversion")), *canary_summary(figures)]
    if figures.get("dp"):
        dp = dict(figures["dp"])
        unit, delta = dp.pop("unit", "chunk"), dp.pop("delta", None)
        head.append((f"Differential privacy (unit: {unit})", ", ".join(f"ε {k} {v:.4g}" for k, v in dp.items())
                     + f" at δ {delta}, per training {unit}"))
    if "warm_start" in figures:  # audits from before it did not record it
        head.append(("Public warm start", warm_start_summary(figures["warm_start"])))
    rows = "".join(f"<tr><td class=name>{_text(name)}</td><td>{_text(value)}</td></tr>" for name, value in head)
    levels = list(figures["config"]["fpr_levels"])
    header = "".join(f"<th>TPR at FPR {level:.1%}</th>" for level in levels)
    attack_rows = []
    for attack in USER_ATTACKS + MODEL_FREE:
        for level in ("sample", "user"):
            if level not in figures["attacks"].get(attack, {"sample": None, "user": None}):
                continue
            result = figures["attacks"].get(attack, {}).get(level)
            if result is None:
                reason = (figures.get("attacks_not_run") or {}).get(attack)  # audits from before it: no reason recorded
                cells = f"<td colspan={len(levels) + 3} class=name>not run{_text(': ' + reason) if reason else ''}</td>"
            else:
                cells = (f"<td>{with_interval(result['auc'], result.get('auc_ci'))}</td>"
                         + "".join(f"<td>{_text(tpr_text(result, str(float(fpr))))}</td>" for fpr in levels)
                         + f"<td>{with_interval(result['advantage'], result.get('advantage_ci'))}</td>"
                         f"<td>{result['members']} / {result['non_members']}</td>")
            attack_rows.append(f"<tr><td class=name>{_text(ATTACK_NAMES[attack])}</td><td class=name>{level}</td>{cells}</tr>")
    config = figures["config"]
    note = (f"<p class=note>In brackets: {config.get('confidence', 0.95):.0%} intervals (attacks: percentile bootstrap "
            f"over users, {config.get('bootstrap_resamples', 'n/a')} resamples; privacy: exact binomial over the audited "
            "identifiers). A TPR at an FPR level needs at least 1/level non-members; with fewer it is not resolved, "
            "and no number is shown.</p>")
    return (f"<table id=summary><tbody>{rows}</tbody></table>"
            f"<table id=attacks><thead><tr><th>Attack</th><th>Level</th><th>AUC</th>{header}<th>Advantage</th>"
            f"<th>Members / non-members</th></tr></thead><tbody>{''.join(attack_rows)}</tbody></table>{note}")


def _sizes_table(figures: dict) -> str:
    rows = "".join(f"<tr><td class=name>{_text(k.replace('_', ' '))}</td><td>{_text(v)}</td></tr>"
                   for k, v in figures["audited"].items())
    return f"<table id=sizes><tbody>{rows}</tbody></table>"


def _image(figure: Figure, alt: str) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90)
    return f'<img alt="{_text(alt)}" src="data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()}">'


def _figure(width: float, height: float, columns: int = 1) -> tuple[Figure, list]:
    """A figure outside pyplot (no global state to close) with fixed margins: a layout engine would measure every
    tick label before drawing and cost as much as the drawing itself, once per figure and epoch."""
    figure = Figure(figsize=(width, height))
    axes = figure.subplots(1, columns, squeeze=False)[0]
    figure.subplots_adjust(left=0.8 / width, right=1 - 0.2 / width, bottom=0.6 / height, top=1 - 0.4 / height, wspace=0.3)
    return figure, list(axes)


def _roc_figure(sample_rows: list[dict], user_rows: list[dict]) -> Figure:
    figure, axes = _figure(11, 4.8, columns=2)
    for ax, level, rows, attacks in ((axes[0], "sample", sample_rows, SAMPLE_ATTACKS + MODEL_FREE),
                                     (axes[1], "user", user_rows, USER_ATTACKS + MODEL_FREE)):
        floor = 1.0
        for attack in attacks:
            scored = [r for r in rows if r.get(f"{attack}_score") is not None]
            labels = np.array([r["member"] for r in scored])
            if len(set(labels.tolist())) < 2:
                continue
            fpr, tpr, _ = roc_curve([r[f"{attack}_score"] for r in scored], labels)
            floor = min(floor, 0.5 / (len(labels) - labels.sum()), 0.5 / labels.sum())
            ax.plot(fpr, tpr, drawstyle="steps-post", label=ATTACK_NAMES[attack])
        floor = min(floor, 1e-3)
        ax.plot([floor, 1], [floor, 1], "k--", linewidth=0.8, label="blind guess")
        ax.set(xscale="log", yscale="log", xlim=(floor, 1), ylim=(floor, 1.05), xlabel="false-positive rate",
               ylabel="true-positive rate", title=f"{level} level")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    return figure


def _epochs_figure(epochs: list[dict]) -> Figure:
    """Privacy on its own axis, zoomed to its range (the interesting values lie between 0.9 and 1)."""
    figure, (privacy, utility, attacks) = _figure(14, 4.2, columns=3)
    x = [e["epoch"] for e in epochs]
    scores = [e["privacy"]["score"] for e in epochs]
    privacy.plot(x, scores, "o-")
    privacy.set(ylim=(min(0.9, min(scores) - 0.01), 1.002), title="privacy (identifiers never predicted)")
    accuracy = [e["utility"]["masked_word_accuracy"] for e in epochs]
    utility.plot(x, [np.nan if a is None else a for a in accuracy], "s-", color="tab:orange")
    utility.set(ylim=(0, 1.02), title="utility (non-member masked word accuracy)")
    for attack in USER_ATTACKS:
        attacks.plot(x, [((e["attacks"].get(attack) or {}).get("user") or {}).get("auc", np.nan) for e in epochs], "o-",
                     label=ATTACK_NAMES[attack])
    attacks.axhline(0.5, color="k", linestyle="--", linewidth=0.8)
    attacks.set(ylim=(0, 1.02), title="user-level attack AUC")
    attacks.legend(fontsize=8, loc="lower left")
    for ax in (privacy, utility, attacks):
        ax.set(xlabel="epoch")
        ax.set_xticks(x)
        ax.grid(True, alpha=0.3)
    return figure


def _regurgitation_figure(figures: dict) -> Figure:
    counts = figures["privacy"]["regurgitation"]
    figure, (ax,) = _figure(6, 4.2)
    occurrences, predictions = np.array(counts["training_occurrences"]), np.array(counts["predictions"])
    if len(occurrences):
        ax.scatter(np.maximum(occurrences, 1), predictions, alpha=0.6)
        ax.set(xscale="log", yscale="log")
    else:
        ax.text(0.5, 0.5, "no identifier was predicted", ha="center", va="center", transform=ax.transAxes)
    ax.set(xlabel="occurrences in training", ylabel="times predicted by the model", title=f"epoch {figures['epoch']}")
    ax.grid(True, which="both", alpha=0.3)
    return figure
