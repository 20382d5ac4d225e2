"""The NER's coverage of hand-written lines in the style of real notes and judgments, and what it tags besides.

The synthetic corpora are written by our generator, whose forms the rules were written for; these lines were
written by hand in the way real ICU notes and Indian and US judgments write identifiers, with the gold words
marked `[[ ]]` (bench/probes/; `\\n` in a line is a line break, for law reports' headings). The `*_found.txt`
files are the lines whose misses became rules; the `*_held_out.txt` files were written after those rules and used
for none: read their figures as how the defaults generalise to forms no one wrote a rule for. Per file: gold words
covered by a span, the words tagged that are not gold, and each line with a miss or an extra (the lines are ours,
synthetic: nothing sensitive).

    python bench/ner_probe.py [--ner default:DIR] [--quiet]

The last line is `probe_held_out_coverage: X`.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from ppmlm.identifiers.ner import load_ner  # noqa: E402

PROBES = Path(__file__).resolve().parent / "probes"
GOLD = re.compile(r"\[\[(.*?)\]\]")
WORD = re.compile(r"\w+")  # words as the gold reports count them


def read_probe(path: Path) -> list[tuple[str, list[tuple[int, int]]]]:
    """(text, gold character spans) for each line of a probe file, the `[[ ]]` marks removed; `\\n` and `\\t` in a line
    are a line break and a tab of its text, so that a judgment's heading of many lines is one text."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        line = line.replace("\\n", "\n").replace("\\t", "\t")
        text, gold, position = "", [], 0
        for match in GOLD.finditer(line):
            text += line[position:match.start()]
            gold.append((len(text), len(text) + len(match.group(1))))
            text += match.group(1)
            position = match.end()
        lines.append((text + line[position:], gold))
    return lines


def inside(word: tuple[int, int], spans) -> bool:
    return any(start <= word[0] and word[1] <= end for start, end in spans)


def measure(ner, path: Path, quiet: bool) -> float:
    lines = read_probe(path)
    gold_words = covered = extra = 0
    for (text, gold), spans in zip(lines, ner.spans([text for text, _ in lines])):
        tagged = [(span.start, span.end) for span in spans]
        words = [match.span() for match in WORD.finditer(text)]
        missed = [text[a:b] for a, b in words if inside((a, b), gold) and not inside((a, b), tagged)]
        besides = [text[a:b] for a, b in words if inside((a, b), tagged) and not inside((a, b), gold)]
        gold_words += sum(inside(word, gold) for word in words)
        covered += sum(inside(word, gold) and inside(word, tagged) for word in words)
        extra += len(besides)
        if (missed or besides) and not quiet:
            shown = text.replace("\n", "\\n").replace("\t", "\\t")
            print(f"  missed {missed} tagged besides {besides}: {shown}")
    coverage = covered / max(gold_words, 1)
    print(f"{path.name}: {len(lines)} lines, {covered} of {gold_words} gold words covered ({coverage:.3f}), "
          f"{extra} other words tagged")
    return coverage


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ner", default="default", help="the NER backend spec (default: the shipped rules)")
    parser.add_argument("--quiet", action="store_true", help="the totals only, not the lines with a miss")
    args = parser.parse_args(argv)
    ner = load_ner(args.ner)
    coverage = {path.name: measure(ner, path, args.quiet) for path in sorted(PROBES.glob("*.txt"))}
    print(f"probe_held_out_coverage: {coverage['clinical_held_out.txt']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
