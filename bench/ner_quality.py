"""How much of the identifiers the blacklist protects, and how much else, on every corpus with gold spans.

Each corpus goes through `build_blacklist` at each profile, as written and upper-cased (a stand-in for
ALL-CAPS notes), and its gold report (stats.json -> `gold`, the same as `ppmlm blacklist` writes) is
printed: coverage of gold identifier words overall and per category, the protected share of word
occurrences, and the share of protected words that are not gold identifiers (1 - precision).

Corpora: from ../shared/data (skipped when absent) Presidio's 1,500 synthetic sentences (17 entity types
mapped to PHI categories; TITLE and NRP are not direct identifiers here) and the held-out half (odd rows)
of the medical abstracts, which hold no PHI (every protected word is a false positive; the even rows
made the common-word lists, ner_models/build_gazetteers.py); and our synthetic clinical and legal corpora
(`ppmlm synth`). Presidio sentences and abstracts have no users: each text is its own user and k=1, so
what is protected there is the direct identifiers (NER, corpus evidence), not the words of one user; the
synthetic corpora have patients and cases as users and the default k=2.

    python bench/ner_quality.py [--profiles balanced high-recall] [--users 160] [--limit N]
                                [--corpora presidio abstracts clinical legal] [--cases written upper]
                                [--ner default:DIR]

`--ner` measures another backend spec, e.g. a copy of ner_models/clinical_en from an earlier commit
(`git archive COMMIT ner_models/clinical_en | tar -x -C /tmp/before`; `--ner default:/tmp/before/ner_models/clinical_en`)
for a before/after comparison on the same corpora.

The last line is `gold_coverage_synthetic_clinical: X` (the first profile asked for, as written).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import datasets  # noqa: E402

from ppmlm.corpus.domains import generate_synthetic  # noqa: E402
from ppmlm.corpus.loading import load_corpus  # noqa: E402
from ppmlm.identifiers.blacklist import build_blacklist  # noqa: E402
from ppmlm.identifiers.labels import PHI_LABELS  # noqa: E402
from ppmlm.identifiers.profiles import PROFILES  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
PRESIDIO = DATA / "presidio_synthetic" / "synth_dataset_v2.json"
ABSTRACTS = DATA / "medical_abstracts" / "medical_tc_test.csv"

CORPORA = ("presidio", "abstracts", "clinical", "legal")
# Presidio entity types -> PHI categories; None: not a direct identifier here (not scored)
PRESIDIO_TO_PHI = {
    "PERSON": "NAME", "STREET_ADDRESS": "LOCATION", "GPE": "LOCATION", "ZIP_CODE": "LOCATION",
    "ORGANIZATION": "HOSPITAL", "DATE_TIME": "DATE", "AGE": "AGE", "PHONE_NUMBER": "PHONE",
    "EMAIL_ADDRESS": "EMAIL", "DOMAIN_NAME": "URL", "CREDIT_CARD": "ID", "IBAN_CODE": "ID", "US_SSN": "ID",
    "US_DRIVER_LICENSE": "ID", "IP_ADDRESS": "ID", "TITLE": None, "NRP": None,
}


def presidio_records(limit: int) -> list[dict]:
    records = json.loads(PRESIDIO.read_text(encoding="utf-8"))[: limit or None]
    return [{"user_id": str(i), "doc_id": str(i), "text": r["full_text"],
             "phi": [{"start": s["start_position"], "end": s["end_position"], "label": PRESIDIO_TO_PHI[s["entity_type"]]}
                     for s in r["spans"] if PRESIDIO_TO_PHI[s["entity_type"]]]}
            for i, r in enumerate(records)]


def abstract_records(limit: int) -> list[dict]:
    with ABSTRACTS.open(newline="", encoding="utf-8") as handle:
        held_out = [row["medical_abstract"] for i, row in enumerate(csv.DictReader(handle)) if i % 2]
    return [{"user_id": str(i), "doc_id": str(i), "text": text, "phi": []} for i, text in enumerate(held_out[: limit or None])]


def synthetic_records(domain: str, users: int, limit: int) -> list[dict]:
    records = generate_synthetic(domain, users, seed=0)[: limit or None]
    return [{key: r[key] for key in ("user_id", "doc_id", "text", "phi")} for r in records]


def measure(records: list[dict], k: int, profile: str, upper: bool, ner: str = "default") -> tuple[dict, float]:
    """The gold report of the blacklist, and the build's seconds."""
    rows = [dict(r, text=r["text"].upper()) for r in records] if upper else records
    corpus = load_corpus(datasets.Dataset.from_list(rows))
    start = time.perf_counter()
    blacklist = build_blacklist(corpus, k=k, ner=ner, profile=profile, progress=False)
    return blacklist.stats["gold"], time.perf_counter() - start


def print_row(name: str, case: str, profile: str, gold: dict, seconds: float) -> None:
    by_label = gold["by_label"]
    cells = [f"{by_label[label]['coverage']:.3f}" if label in by_label else "-" for label in PHI_LABELS]
    coverage = f"{gold['coverage']:.4f}" if gold["gold_words"] else "-"
    print(f"| {name} | {case} | {profile} | {coverage} | " + " | ".join(cells)
          + f" | {gold['protected_share']:.4f} | {gold['protected_not_gold_share']:.3f} | {seconds:.0f} |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", nargs="+", choices=PROFILES, default=list(PROFILES))
    parser.add_argument("--users", type=int, default=160, help="patients / cases of each synthetic corpus")
    parser.add_argument("--limit", type=int, default=0, help="use only the first N texts of each corpus")
    parser.add_argument("--corpora", nargs="+", choices=CORPORA, default=list(CORPORA),
                        help="which corpora (each takes minutes on 2 cores; run them in separate processes)")
    parser.add_argument("--cases", nargs="+", choices=("written", "upper"), default=["written", "upper"],
                        help="the texts as written, upper-cased (a stand-in for ALL-CAPS notes), or both")
    parser.add_argument("--ner", default="default", help="the NER backend spec (default: the shipped rules)")
    args = parser.parse_args(argv)

    corpora = []  # (name, records, k)
    public = [name for name in ("presidio", "abstracts") if name in args.corpora]
    if public and not (PRESIDIO.is_file() and ABSTRACTS.is_file()):
        print(f"public corpora skipped: {DATA.resolve()} not found")
    elif public:
        corpora += [(f"{name} ({len(records)} texts)", records, 1) for name, records in (
            ("presidio", presidio_records(args.limit) if "presidio" in public else None),
            ("abstracts (held out)", abstract_records(args.limit) if "abstracts" in public else None)) if records is not None]
    corpora += [(f"synthetic {domain} ({len(records)} texts)", records, 2) for domain in ("clinical", "legal")
                if domain in args.corpora for records in [synthetic_records(domain, args.users, args.limit)]]

    print("| corpus | case | profile | coverage | " + " | ".join(PHI_LABELS)
          + " | protected share | protected, not gold | build s |")
    print("|---" * (len(PHI_LABELS) + 7) + "|")
    headline = None
    for name, records, k in corpora:
        for upper in [case == "upper" for case in args.cases]:
            for profile in args.profiles:
                gold, seconds = measure(records, k, profile, upper, args.ner)
                print_row(name, "upper-cased" if upper else "as written", profile, gold, seconds)
                if name.startswith("synthetic clinical") and not upper and profile == args.profiles[0]:
                    headline = gold["coverage"]
    print("\ncoverage: gold identifier words protected; per category likewise; protected share: of all word "
          "occurrences; protected, not gold: share of protected word occurrences outside every gold span")
    if headline is not None:
        print(f"gold_coverage_synthetic_clinical: {headline:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
