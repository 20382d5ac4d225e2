"""The regex ruler: identifiers in formats spaCy's tokenizer splits (phones, IDs, dates, addresses) and identifiers
in a context (the context patterns are the same component on another rules file)."""
from __future__ import annotations

import json
import re
from pathlib import Path

from spacy.language import Language
from spacy.util import filter_spans

from ppmlm.identifiers.labels import NAME, PHI_LABELS
from ppmlm.identifiers.ner.doc_facts import WORD, add_entities, doc_text
from ppmlm.identifiers.ner.model_dir import read_lists, read_phrases
from ppmlm.identifiers.ner.registry import NERError
from ppmlm.identifiers.profiles import DEFAULT_PROFILE, PROFILES

_LIST = re.compile(r"\{\{([\w.-]+)\}\}")


def _alternation(rules: str, rule_id: str, path: Path) -> str:
    """A phrase list as a regex alternation (see RegexRuler)."""
    if not path.is_file():
        raise NERError(f"{rules}: rule {rule_id!r} names the list {path.name}, which is not beside it")
    phrases = sorted(set(read_phrases(path)), key=lambda x: (-len(x), x))
    return "(?:" + "|".join(r"[ \t]+".join(map(re.escape, phrase.split())) for phrase in phrases) + ")"


class RegexRuler:
    """Sets `doc.ents` from one compiled alternation of the rules in a JSONL file.

    A rule is {"label", "id", "starts", "pattern"} and optionally "requires", "profiles" (those it runs in;
    default all), "not_first" and "cut_before" (word lists beside the rules file: leading listed words are
    stripped from the value, which ends before a `cut_before` word), "whole" (true: a value that would lose a
    leading word is no match: "Noted, NY" is no town and its state); a named group `v` in the
    pattern marks the part that is the identifier ("MRN: 123" -> "123"). Among rules that can start at a
    position, the first that matches wins, so specific formats are listed before general ones. Matches
    are widened to whole spaCy tokens. `starts` says where a match can begin: "digit" (a digit after a
    word boundary, or "+", "(", "#"), "letter" (a letter after a word boundary) or "any" (either; the
    default). The scan tests that once per position instead of trying every rule everywhere, which
    makes the one pass over the text about twice as fast. `requires` is a regex that any text the rule
    matches contains (its keyword: "court", "LLC"): texts without it are scanned without the rule, so
    rules for one domain cost nothing on another. The rules that require one keyword are one alternation,
    those that require none another, each compiled once: a text is scanned by the alternations its keywords
    allow, merged as one alternation of those rules would match (the leftmost match; at one position the
    rule first by where it can start, then in the file), so that no set of keywords needs an alternation
    compiled for it.
    `{{file.txt}}` in a pattern stands for the phrases of a list beside the rules file, one a line (`# `
    comments), as an alternation, longest first, a space matching any run of spaces or tabs: a rule can
    name 80 procedure abbreviations without writing them into its regex.
    """

    _GUARDS = {
        "digit": r"(?:\b(?=\d)|(?=[+(#]))",
        "letter": r"\b(?=[^\W\d])",
        "any": r"(?:\b|(?=[+(#]))",
    }

    def __init__(self, path: str, profile: str = DEFAULT_PROFILE):
        lines = Path(path).read_text(encoding="utf-8").splitlines()
        rules = [json.loads(line) for line in lines if line.strip()]
        rules = [rule for rule in rules if profile in rule.get("profiles", PROFILES)]
        self._alternatives: list[tuple[str, str]] = []  # (starts, named pattern), in file order
        self._requires: dict[int, re.Pattern] = {}  # rule index -> regex a text needs for the rule to run
        self._rules: dict[str, tuple[str, str, str | None]] = {}
        self._not_first: dict[str, frozenset[str]] = {}  # rule group -> words stripped from a value's start
        self._cut_before: dict[str, frozenset[str]] = {}  # rule group -> words a value ends before
        self._whole: set[str] = set()  # rule groups whose value is kept whole or not at all
        for i, rule in enumerate(rules):
            rule_id = rule.get("id", f"regex{i}")
            starts = rule.get("starts", "any")
            if rule["label"] not in PHI_LABELS or starts not in self._GUARDS:
                raise NERError(f"{path}: rule {rule_id!r} needs a label in {PHI_LABELS} and `starts` "
                               f"in {tuple(self._GUARDS)}, not {rule['label']!r} and {starts!r}")
            pattern = _LIST.sub(lambda match: _alternation(path, rule_id, Path(path).parent / match.group(1)), rule["pattern"])
            value = None
            if "(?P<v>" in pattern:
                value = f"r{i}v"
                pattern = pattern.replace("(?P<v>", f"(?P<{value}>")
            self._alternatives.append((starts, f"(?P<r{i}>{pattern})"))
            self._rules[f"r{i}"] = (rule["label"], rule_id, value)
            if rule.get("requires"):  # rules with the same keyword share one regex, searched once per text
                needed = next((r for r in self._requires.values() if r.pattern == rule["requires"]), None)
                self._requires[i] = needed or self._compile(path, rule_id, rule["requires"])
            if rule.get("whole"):
                self._whole.add(f"r{i}")
            for key, lists in (("not_first", self._not_first), ("cut_before", self._cut_before)):
                if rule.get(key):
                    lists[f"r{i}"] = read_lists(Path(path).parent, rule[key])
        for i, (_, pattern) in enumerate(self._alternatives):  # a bad rule fails at load, named
            self._compile(path, self._rules[f"r{i}"][1], pattern)
        order = list(self._GUARDS)
        self._rank = {f"r{i}": (order.index(starts), i) for i, (starts, _) in enumerate(self._alternatives)}
        keywords = {needed.pattern: needed for needed in self._requires.values()}
        self._groups: list[tuple[re.Pattern | None, re.Pattern]] = [
            (needed, self._alternation(path, [i for i in range(len(self._alternatives)) if self._requires.get(i) is needed]))
            for needed in [None, *keywords.values()]]

    @staticmethod
    def _compile(path: str, rule_id: str, pattern: str) -> re.Pattern:
        try:
            return re.compile(pattern)
        except re.error as error:
            raise NERError(f"{path}: rule {rule_id!r}: bad pattern: {error}") from error

    def _alternation(self, path: str, rules: list[int]) -> re.Pattern:
        """One regex of the rules, grouped by where they can start."""
        groups: dict[str, list[str]] = {start: [] for start in self._GUARDS}
        for i in rules:
            starts, pattern = self._alternatives[i]
            groups[starts].append(pattern)
        alternatives = [self._GUARDS[k] + "(?:" + "|".join(v) + ")" for k, v in groups.items() if v]
        return self._compile(path, "(all)", "|".join(alternatives) or "(?!)")

    def _scanners(self, text: str) -> list[re.Pattern]:
        """The alternations of the rules that can match in `text`."""
        return [scanner for needed, scanner in self._groups if needed is None or needed.search(text) is not None]

    def _first_match(self, scanners: list[re.Pattern], found: list, text: str, position: int):
        """The match one alternation of all the scanners' rules would give from `position`. `found` holds each
        scanner's last match (None: not searched yet, False: none left), still leftmost while it starts at
        `position` or after."""
        best = None
        for k, scanner in enumerate(scanners):
            match = found[k]
            if match is None or (match is not False and match.start() < position):
                match = found[k] = scanner.search(text, position) or False
            if match and (best is None or (match.start(), self._rank[match.lastgroup])
                          < (best.start(), self._rank[best.lastgroup])):
                best = match
        return best

    def __call__(self, doc):
        spans = []
        text = doc_text(doc)
        scanners, position = self._scanners(text), 0
        found = [None] * len(scanners)
        while (match := self._first_match(scanners, found, text, position)) is not None:
            group = match.lastgroup
            label, rule_id, value = self._rules[group]
            start, end = match.span(value) if value else match.span()
            if group in self._not_first or group in self._cut_before:
                not_first, cut_before = self._not_first.get(group, ()), self._cut_before.get(group, ())
                kept = self._trim(text, start, end, not_first, cut_before, initial=label == NAME)
                start, end = (start, start) if group in self._whole and kept[0] != start else kept
            if end <= start:  # a value trimmed to nothing takes no text: "going to GOOD" leaves "to GOOD SAMARITAN"
                position = match.start() + 1
                continue
            position = match.end()
            span = doc.char_span(start, end, label=label, span_id=rule_id, alignment_mode="expand")
            if span is not None and len(span):
                spans.append(span)
        if spans:
            doc.ents = add_entities(doc, filter_spans(spans), widen=True)
        return doc

    @staticmethod
    def _trim(text: str, start: int, end: int, not_first, cut_before, initial: bool = False) -> tuple[int, int]:
        """The value without its leading `not_first` words ("comfortably sarah" -> "sarah"; "Floor" -> none),
        cut before its first `cut_before` word after that ("CMC ICU" -> "CMC"). A value left starting with a digit
        is none ("Levophed 10" -> "10", "chromosome 17q" -> "17q" are no ward); with `initial`, a one-letter word
        before the kept part stays with it ("dr o brien" -> "o brien") and a one-letter word after another is an initial,
        never a cut ("K. V. Murthy", though `v` is *versus*). A value that starts with a number (a
        ward written number first, "11 Reisman") is kept whole when the word after the number would be kept,
        and is none otherwise ("on 4 Levophed", "to 2 North")."""
        words = list(WORD.finditer(text, start, end))
        numbered = len(words) > 1 and words[0].group().isdigit()
        lead = int(numbered)
        while lead < len(words) and words[lead].group().lower() in not_first:
            lead += 1
        if lead == len(words) or not words[lead].group()[0].isalpha() or (numbered and lead > 1):
            return start, start
        lead = 0 if numbered else lead
        if initial and lead and len(words[lead - 1].group()) == 1:
            lead -= 1
        kept = words[lead:]
        last = next((i for i, word in enumerate(kept) if i and word.group().lower() in cut_before
                     and not (initial and len(word.group()) == 1 == len(kept[i - 1].group()))), len(kept))
        return kept[0].start(), (end if last == len(kept) else kept[last - 1].end())


@Language.factory("ppmlm_regex_ruler", default_config={"path": "", "profile": DEFAULT_PROFILE})
def _make_regex_ruler(nlp: Language, name: str, path: str, profile: str) -> RegexRuler:
    return RegexRuler(path, profile)
