"""`ppmlm detector evaluate`: what a detector trained on some patients finds in the notes of patients it never saw.

The annotated users are dealt into K folds (`user_folds`); for each fold a detector is trained on the other folds'
users (`train_detector`, into a private temporary folder removed afterwards) and the held-out fold's notes go
through three blacklists, built as `ppmlm blacklist` builds them: the rules alone (the `default` backend), the
detector alone, and their union (`union_spans`, what `default+detector:DIR` runs). Each is measured by the
blacklist's gold report against the fold's annotations: gold words covered overall and per category, the share of
all words protected, and precision (the share of protected words that are annotated). Counts are summed over the
folds, so every annotated user is measured once, by a detector that never saw them.
"""
from __future__ import annotations

import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from ppmlm.detector.directory import DetectorError
from ppmlm.detector.examples import annotations, user_folds
from ppmlm.detector.training import TrainingSettings, train_detector
from ppmlm.files import sensitive_scratch
from ppmlm.identifiers.blacklist import (
    ProtectionCounts,
    TermMatcher,
    build_blacklist,
    count_protection,
    gold_spans,
    ner_processes,
)
from ppmlm.identifiers.ner import load_ner, union_spans
from ppmlm.identifiers.profiles import DEFAULT_PROFILE
from ppmlm.words import WordSegmenter

SIDES = ("rules", "detector", "union")


def evaluate_detector(corpus, folds: int = 2, *, spans_from: str = "phi", model=None,
                      settings: TrainingSettings = TrainingSettings(), k: int = 2, profile: str = DEFAULT_PROFILE,
                      where: str = "the corpus", progress: bool = True) -> dict:
    """K-fold evaluation by user of a detector trained with `settings` on `corpus`'s annotations (column
    `spans_from`) against the rules, and of their union. Returns the figures (counts, shares; no text)."""
    start = time.perf_counter()
    if not isinstance(folds, int) or folds < 2:
        raise DetectorError(f"--folds {folds!r}: expected an integer of at least 2")
    if not isinstance(k, int) or k < 1:
        raise DetectorError(f"--k {k!r}: expected an integer of at least 1")
    settings.check()
    annotations(corpus, spans_from, where)  # a missing column or a malformed span: now, not after a fold's training
    users = list(corpus["user_id"])
    groups = user_folds(users, folds, settings.seed, where)
    per_fold = []
    with sensitive_scratch(Path(tempfile.gettempdir()), "ppmlm-detector-folds") as work:  # the folds' detectors
        for number, held in enumerate(groups, start=1):
            held = set(held)
            held_rows = [i for i, user in enumerate(users) if user in held]
            train_rows = [i for i, user in enumerate(users) if user not in held]
            print(f"fold {number}/{folds}: training on {len(train_rows)} documents of {len(set(users)) - len(held)} users, "
                  f"measuring on {len(held_rows)} documents of {len(held)} users")
            directory = Path(work) / f"fold-{number}"
            trained = train_detector(corpus.select(train_rows), directory, spans_from=spans_from, model=model,
                                     settings=settings, where=f"{where} (fold {number})", progress=progress)
            figures = measure_fold(corpus.select(held_rows), directory, spans_from, k, profile)
            per_fold.append({"fold": number, "users": len(held), "documents": len(held_rows),
                             "threshold": trained.threshold, **figures})
            load_ner.cache_clear()  # the fold's detector is deleted with the folder
    return {"folds": folds, "users": len(set(users)), "documents": len(users), "spans_from": spans_from, "k": k,
            "profile": profile, "settings": asdict(settings), "pooled": _pooled(per_fold), "per_fold": per_fold,
            "seconds": round(time.perf_counter() - start, 1)}


def measure_fold(held_out, detector_dir: Path, gold_column: str, k: int, profile: str) -> dict:
    """Counts of the held-out notes' protection by the rules, the detector and both: as blacklists (`blacklist`: their
    gold reports) and as direct spans alone (`spans`: the same count without the blacklist's terms)."""
    texts, doc_ids = list(held_out["text"]), list(held_out["doc_id"])
    gold = gold_spans(held_out, gold_column)
    rules = list(load_ner("default", profile).spans(texts, n_process=ner_processes(len(texts))))
    tagged = list(load_ner(f"detector:{detector_dir}").spans(texts))
    union = [union_spans(text, [a, b], ["default", "detector"]) for text, a, b in zip(texts, rules, tagged)]
    counts = {}
    for side, found in zip(SIDES, (rules, tagged, union)):
        column = f"ppmlm_{side}_spans"
        records = [[{"start": s.start, "end": s.end, "label": s.label} for s in spans] for spans in found]
        blacklist = build_blacklist(held_out.add_column(column, records), k=k, ner="none", spans_from=column,
                                    gold_field=gold_column, profile=profile, progress=False)
        direct = count_protection(texts, doc_ids, dict(zip(doc_ids, found)), gold, TermMatcher(()), WordSegmenter())
        counts[side] = {"blacklist": _report_counts(blacklist.stats["gold"]), "spans": _protection_counts(direct)}
    return counts


def _report_counts(report: dict) -> dict:
    return {"words": report["word_occurrences"], "protected": report["protected_words"],
            "protected_not_gold": report["protected_not_gold_words"], "gold_words": report["gold_words"],
            "covered": report["covered_words"],
            "by_label": {label: [v["covered_words"], v["gold_words"]] for label, v in report["by_label"].items()}}


def _protection_counts(counts: ProtectionCounts) -> dict:
    covered, gold_words, protected_not_gold = counts.gold_union
    return {"words": counts.total_words, "protected": counts.protected_words, "protected_not_gold": protected_not_gold,
            "gold_words": gold_words, "covered": covered, "by_label": {k: list(v) for k, v in counts.gold_words.items()}}


def _pooled(per_fold: list[dict]) -> dict:
    """The folds' counts summed, per side and level, with their shares."""
    pooled = {}
    for side in SIDES:
        pooled[side] = {}
        for level in ("blacklist", "spans"):
            total = {"words": 0, "protected": 0, "protected_not_gold": 0, "gold_words": 0, "covered": 0, "by_label": {}}
            for fold in per_fold:
                counts = fold[side][level]
                for key in ("words", "protected", "protected_not_gold", "gold_words", "covered"):
                    total[key] += counts[key]
                for label, (hit, all_) in counts["by_label"].items():
                    pair = total["by_label"].setdefault(label, [0, 0])
                    pair[0] += hit
                    pair[1] += all_
            pooled[side][level] = with_shares(total)
    return pooled


def with_shares(counts: dict) -> dict:
    """Counts and what they mean: coverage of the gold words (overall, per category), protected share of all words,
    precision (share of protected words that are gold)."""
    return {**counts, "coverage": counts["covered"] / max(counts["gold_words"], 1),
            "coverage_by_label": {label: hit / max(all_, 1) for label, (hit, all_) in sorted(counts["by_label"].items())},
            "protected_share": counts["protected"] / max(counts["words"], 1),
            "precision": 1 - counts["protected_not_gold"] / max(counts["protected"], 1)}


def table(results: dict) -> str:
    """The pooled figures as a Markdown table: one row per side (rules, detector, union) and level."""
    labels = sorted({label for side in SIDES for label in results["pooled"][side]["blacklist"]["coverage_by_label"]})
    lines = [f"{results['folds']}-fold evaluation by user: {results['users']} users, {results['documents']} documents "
             f"(blacklists at k={results['k']}, profile {results['profile']}; every user measured once, by a detector "
             "trained without them)",
             "| NER | level | coverage | " + " | ".join(labels) + " | protected share | precision |",
             "|---" * (len(labels) + 5) + "|"]
    for side in SIDES:
        for level in ("blacklist", "spans"):
            figures = results["pooled"][side][level]
            cells = [f"{figures['coverage_by_label'][label]:.3f}" if label in figures["coverage_by_label"] else "-"
                     for label in labels]
            name = {"rules": "rules (default)", "detector": "detector", "union": "default+detector"}[side]
            lines.append(f"| {name} | {level} | {figures['coverage']:.4f} | " + " | ".join(cells)
                         + f" | {figures['protected_share']:.2%} | {figures['precision']:.3f} |")
    thresholds = ", ".join(f"{fold['threshold']:.3f}" for fold in results["per_fold"])
    lines.append(f"thresholds chosen per fold: {thresholds}")
    return "\n".join(lines)
