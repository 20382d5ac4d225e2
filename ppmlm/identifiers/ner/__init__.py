"""Direct identifiers: named-entity spans per document, labelled with a PHI category.

A backend turns texts into character spans labelled from `PHI_LABELS`. Backends are pluggable through a
small registry (`register_ner`, `registry.py`), so a Presidio or transformers tagger can replace the default
without touching the stages that consume spans.

The default backend (`ner_models/clinical_en/`, built by `pipeline.py`) is the offline English spaCy model's
statistical NER with rule components placed *before* it, so the model keeps their spans and predicts around
them (it sees them as blocked tokens):

- `regex_ruler.py`: one compiled regex alternation over the text, for formats the statistical model splits
  or misses (phones, e-mails, URLs, record numbers, ages, numeric dates, street addresses); the same component
  runs the context patterns (an institution after "transferred from", years in context, signatures);
- spaCy's `entity_ruler`: token patterns for names after a title and institutions named by a keyword
  ("St. Mary's Hospital"), in title case and in ALL CAPS, plus a case-insensitive place gazetteer;
- `place_names.py`: towns built like most US ones ("Allenville", "West Adamburgh");
- `name_gazetteer.py`: listed first and last names, with the ambiguity rule and whole names.

The model's labels are then mapped to PHI categories (`labels.json`) and its spans filtered for precision
(`filters.py`): it is unreliable on ALL-CAPS text (it tags "CHF" or "YO M W/ HX" as ORG) and on biomedical
vocabulary (eponyms, gene and drug names), and its DATE includes durations ("3 years"). Precision matters
twice here: a span's term joins the corpus-wide blacklist, so one false positive on a common word protects
every occurrence of that word. `spacy_backend.py` runs a spaCy pipeline over texts of any length, in worker
processes if asked.
"""
import importlib.util

from ppmlm.identifiers.ner.detector_dir import DetectorSettings, check_detector_dir, enclosing_detector, is_detector_dir
from ppmlm.identifiers.ner.filters import EnglishForms, Filters
from ppmlm.identifiers.ner.model_dir import (
    DEFAULT_MODEL_DIR,
    ner_rules_digest,
    pipeline_config,
    read_labels,
    read_lists,
    read_words,
)
from ppmlm.identifiers.ner.name_gazetteer import NameGazetteer
from ppmlm.identifiers.ner.pipeline import build_rules_pipeline
from ppmlm.identifiers.ner.place_names import PlaceNames
from ppmlm.identifiers.ner.regex_ruler import RegexRuler
from ppmlm.identifiers.ner.registry import (
    NERBackend,
    NERError,
    Span,
    check_spec,
    load_ner,
    register_ner,
    register_union,
    split_spec,
)
from ppmlm.identifiers.ner.spacy_backend import SpacyNER, cut_into_pieces
from ppmlm.identifiers.ner.union import UnionNER, union_spans

__all__ = [
    "DEFAULT_MODEL_DIR", "DetectorSettings", "EnglishForms", "Filters", "NERBackend", "NERError", "NameGazetteer",
    "PlaceNames", "RegexRuler", "Span", "SpacyNER", "UnionNER", "build_rules_pipeline", "check_detector_dir",
    "check_spec", "cut_into_pieces", "enclosing_detector", "is_detector_dir", "load_ner", "ner_rules_digest", "pipeline_config",
    "read_labels", "read_lists", "read_words", "register_ner", "register_union", "split_spec", "union_spans",
]


def _check_detector(arg: str | None) -> None:
    if not arg:
        raise NERError('the "detector" NER backend needs a directory: "detector:DIR" (ppmlm detector train --out DIR)')
    check_detector_dir(arg)

PRESIDIO_MISSING = 'the "presidio" NER backend needs Presidio, which is not installed: pip install "ppmlm[presidio]"'


@register_ner("detector", check=_check_detector)
def _detector_backend(arg: str | None):
    """A token classifier trained on a team's annotations (`ppmlm detector train`; tagger.py)."""
    _check_detector(arg)  # one clear line for a wrong directory, before transformers is imported
    from ppmlm.identifiers.ner.tagger import Tagger  # transformers takes seconds to import: only a detector needs it

    return Tagger.load(arg)


def _check_presidio(arg: str | None) -> None:
    if importlib.util.find_spec("presidio_analyzer") is None:
        raise NERError(PRESIDIO_MISSING)


@register_ner("presidio", check=_check_presidio)
def _presidio_backend(arg: str | None):
    """Microsoft Presidio's analyzer on our spaCy model (presidio.py), with the extra ppmlm[presidio]; "presidio:T"
    keeps its results of score T or more."""
    try:  # an optional dependency: only this backend needs it
        from ppmlm.identifiers.ner.presidio import PresidioNER, parse_threshold
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] not in ("presidio_analyzer", "tldextract"):
            raise
        raise NERError(PRESIDIO_MISSING) from None
    return PresidioNER(parse_threshold(arg))
