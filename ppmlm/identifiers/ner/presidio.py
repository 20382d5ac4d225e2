"""Microsoft Presidio's analyzer as an NER backend: `load_ner("presidio")`, `presidio:THRESHOLD`, or joined with ours
(`default+presidio`). Installed with the extra `ppmlm[presidio]`.

Presidio runs its recognizers (regexes with checksums and context words for phones, e-mails, URLs, IPs, SSNs, credit
cards, licences, ...) and a spaCy NER over each text. Its spaCy model is the one our default pipeline wraps
(`spacy_model` in ner_models/clinical_en/pipeline.json), loaded here from the installed package and handed to Presidio,
whose own loader would download a missing model. Its entity types become our categories through the label map of that
directory (labels.json: PERSON -> NAME, ORGANIZATION -> HOSPITAL, DATE_TIME -> DATE, PHONE_NUMBER -> PHONE, US_SSN ->
ID, ...); types the map drops or lacks (NRP) are not identifiers here.
"""
from __future__ import annotations

from bisect import bisect_left
from itertools import tee
from pathlib import Path
from typing import Iterable, Iterator

import spacy
import tldextract
from presidio_analyzer import AnalyzerEngine, RecognizerRegistry, RecognizerResult
from presidio_analyzer.nlp_engine import SpacyNlpEngine
from presidio_analyzer.predefined_recognizers import EmailRecognizer

from ppmlm.identifiers.labels import PHI_LABELS
from ppmlm.identifiers.ner.model_dir import DEFAULT_MODEL_DIR, pipeline_config, read_labels
from ppmlm.identifiers.ner.registry import NERError, Span
from ppmlm.identifiers.ner.spacy_backend import cut_into_pieces, spans_in_workers
from ppmlm.identifiers.profiles import DEFAULT_PROFILE

# Presidio reports every result with a score in [0, 1]; below this one a result is dropped. Its bare patterns for
# numbers that could be anything (US_BANK_NUMBER, US_PASSPORT, US_DRIVER_LICENSE without context words) score 0.01-0.05,
# a phone number without context 0.4, the spaCy model's entities 0.85. docs/ner.md measures the choice.
DEFAULT_THRESHOLD = 0.3
LANGUAGE = "en"


class PresidioNER:
    """Presidio's AnalyzerEngine over texts of any length (cut into pieces like SpacyNER's), results above the score
    threshold mapped to PHI categories, overlaps resolved by score."""

    texts_per_task = 256  # texts a worker process gets at a time with n_process > 1

    def __init__(self, threshold: float = DEFAULT_THRESHOLD, model_dir: Path = DEFAULT_MODEL_DIR):
        self.threshold = threshold
        config = pipeline_config(model_dir)
        self.label_map = {**read_labels(Path(model_dir) / config["labels"]), **{label: label for label in PHI_LABELS}}
        self.analyzer = offline_analyzer(config["spacy_model"])
        self.piece_chars = min(100_000, self.analyzer.nlp_engine.nlp[LANGUAGE].max_length)

    @property
    def name(self) -> str:
        return "presidio" if self.threshold == DEFAULT_THRESHOLD else f"presidio:{self.threshold:g}"

    @property
    def spec(self) -> tuple[str, str]:
        """What a worker process loads the same backend from."""
        return self.name, DEFAULT_PROFILE

    def spans(self, texts: Iterable[str], *, batch_size: int = 64, n_process: int = 1) -> Iterator[list[Span]]:
        """One sorted, non-overlapping list per text. With `n_process` > 1, spawned worker processes that each load
        Presidio run it on a share of the texts."""
        if n_process > 1:
            yield from spans_in_workers(self.spec, texts, batch_size, n_process, self.texts_per_task)
            return
        pieces, feed = tee((piece, offset, last) for text in texts
                           for piece, offset, last in cut_into_pieces(text, self.piece_chars))
        analyzed = self.analyzer.nlp_engine.process_batch((piece for piece, _, _ in feed), LANGUAGE, batch_size)
        found: list[tuple[RecognizerResult, int]] = []
        for (piece, offset, last), (_, artifacts) in zip(pieces, analyzed):
            found += [(result, offset) for result in self.analyzer.analyze(
                piece, LANGUAGE, score_threshold=self.threshold, nlp_artifacts=artifacts)]
            if last:
                yield self._to_spans(found)
                found = []

    def _to_spans(self, found: list[tuple[RecognizerResult, int]]) -> list[Span]:
        """The results with a PHI category, the higher score first where two overlap (an e-mail address over the URL
        and the organisation Presidio also finds in it), ties to the longer."""
        ranked = sorted(((result.score, result.end - result.start, result.start + offset, result.end + offset,
                          self.label_map.get(result.entity_type)) for result, offset in found),
                        key=lambda item: (-item[0], -item[1], item[2]))
        kept: list[Span] = []  # sorted, non-overlapping
        for _, _, start, end, label in ranked:
            at = bisect_left(kept, (start,), key=lambda span: (span.start,))
            free = (at == 0 or kept[at - 1].end <= start) and (at == len(kept) or end <= kept[at].start)
            if label is not None and free:
                kept.insert(at, Span(start, end, label))
        return kept


class OfflineEmailRecognizer(EmailRecognizer):
    """Presidio's e-mail recognizer checks the domain with tldextract's module-level extractor, which fetches the public
    suffix list from the internet on its first use; this one reads the list the tldextract package ships."""

    domains = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

    def validate_result(self, pattern_text: str) -> bool:
        return self.domains(pattern_text).fqdn != ""


def offline_analyzer(spacy_model: str) -> AnalyzerEngine:
    """An AnalyzerEngine on an installed spaCy pipeline, that reaches no network: the model is loaded here (Presidio's
    SpacyNlpEngine.load would download one it does not find) and the e-mail recognizer is the offline one."""
    if not (spacy.util.is_package(spacy_model) or Path(spacy_model).is_dir()):
        raise NERError(f"presidio: the spaCy pipeline {spacy_model!r} is not installed (ppmlm never downloads one)")
    engine = SpacyNlpEngine(models=[{"lang_code": LANGUAGE, "model_name": spacy_model}])
    engine.nlp = {LANGUAGE: spacy.load(spacy_model)}
    registry = RecognizerRegistry(supported_languages=[LANGUAGE])
    registry.load_predefined_recognizers(languages=[LANGUAGE], nlp_engine=engine)
    registry.remove_recognizer(EmailRecognizer.__name__)
    registry.add_recognizer(OfflineEmailRecognizer())
    return AnalyzerEngine(nlp_engine=engine, registry=registry, supported_languages=[LANGUAGE])


def parse_threshold(arg: str | None) -> float:
    """The score threshold of a spec "presidio:ARG"; one NERError for anything but a number in [0, 1]."""
    if arg is None:
        return DEFAULT_THRESHOLD
    try:
        threshold = float(arg)
    except ValueError:
        threshold = -1.0
    if not 0.0 <= threshold <= 1.0:
        raise NERError(f"NER spec 'presidio:{arg}': the argument is Presidio's score threshold, a number from 0 to 1 "
                       f"(default {DEFAULT_THRESHOLD})")
    return threshold
