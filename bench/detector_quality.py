"""A detector trained on annotations, measured by folds of users on every annotated corpus we have: the rules alone,
the detector alone and their union (`ppmlm detector evaluate`, docs/ner.md "A detector trained on your annotations").

Corpora: our synthetic clinical notes (`ppmlm synth --users 160`, the realistic style of issue 11, seed 0) and legal
documents (`--domain legal`), and, from ../shared/data (skipped when absent), Presidio's 1,500 synthetic sentences
(entity types mapped to PHI categories as bench/ner_quality.py does; TITLE and NRP not scored). Presidio sentences
have no users: each is its own user, and k=1 (what is protected there is the direct identifiers); the synthetic
corpora have patients and cases, and k=2.

    python bench/detector_quality.py [--corpora clinical legal presidio] [--folds 2] [--users 160] [--out DIR]
                                     [--set epochs=4 layers=2 ...]

Each corpus prints its table and writes `DIR/<corpus>.json`. The last line is `union_coverage_min: X`, the lowest
pooled coverage of the union (rules and detector) over the corpora measured; `union_never_below_rules` (1 or 0) is
printed above it.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import datasets  # noqa: E402
from ner_quality import PRESIDIO, presidio_records, synthetic_records  # noqa: E402  (bench/ is the script's folder)

from ppmlm.corpus.loading import load_corpus  # noqa: E402
from ppmlm.detector.evaluation import evaluate_detector, table  # noqa: E402
from ppmlm.detector.training import TrainingSettings  # noqa: E402
from ppmlm.processes import Terminated, terminated_as_exception  # noqa: E402

CORPORA = ("clinical", "legal", "presidio")


def records_of(name: str, users: int) -> tuple[list[dict], int] | None:
    """The corpus's records and the k of its blacklists; None when its data is absent."""
    if name == "presidio":
        return (presidio_records(0), 1) if PRESIDIO.is_file() else None
    return synthetic_records(name, users, 0), 2


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", nargs="+", choices=CORPORA, default=list(CORPORA))
    parser.add_argument("--folds", type=int, default=2)
    parser.add_argument("--users", type=int, default=160, help="patients / cases of each synthetic corpus")
    parser.add_argument("--out", type=Path, default=Path("detector_quality"), help="folder for the JSON figures")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="training settings (TrainingSettings)")
    args = parser.parse_args(argv)
    options = {key: json.loads(value) for key, value in (item.split("=", 1) for item in args.set)}
    settings = TrainingSettings.from_options(options)
    args.out.mkdir(parents=True, exist_ok=True)
    lowest, never_below = None, True
    for name in args.corpora:
        found = records_of(name, args.users)
        if found is None:
            print(f"{name}: skipped, {PRESIDIO} not found")
            continue
        records, k = found
        corpus = load_corpus(datasets.Dataset.from_list(records))
        start = time.perf_counter()
        results = evaluate_detector(corpus, args.folds, settings=settings, k=k, where=name, progress=False)
        print(f"\n{name}: {time.perf_counter() - start:.0f} s (load average now {os.getloadavg()[0]:.1f})")
        print(table(results))
        (args.out / f"{name}.json").write_text(json.dumps(results, indent=1) + "\n")
        pooled = results["pooled"]
        union = pooled["union"]["blacklist"]["coverage"]
        lowest = union if lowest is None else min(lowest, union)
        never_below &= all(fold["union"]["blacklist"]["covered"] >= fold["rules"]["blacklist"]["covered"]
                           for fold in results["per_fold"])
    print(f"union_never_below_rules: {int(never_below)}")
    if lowest is not None:
        print(f"union_coverage_min: {lowest:.4f}")
    return 0


if __name__ == "__main__":
    try:
        with terminated_as_exception():  # `kill` deletes the folds' temporary folder (weights trained on notes), as Ctrl-C does
            sys.exit(main())
    except Terminated:
        sys.exit("\ndetector_quality: terminated")
