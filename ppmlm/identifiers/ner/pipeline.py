"""The default backend: the rule components, then the statistical NER predicting around their spans."""
from __future__ import annotations

from pathlib import Path

import spacy
from spacy.language import Language

import ppmlm.identifiers.ner.name_gazetteer  # noqa: F401  (the modules register their spaCy factories)
import ppmlm.identifiers.ner.name_lists  # noqa: F401
import ppmlm.identifiers.ner.place_names  # noqa: F401
import ppmlm.identifiers.ner.regex_ruler  # noqa: F401
from ppmlm.identifiers.ner.doc_facts import GAZETTEER
from ppmlm.identifiers.ner.filters import Filters
from ppmlm.identifiers.ner.model_dir import DEFAULT_MODEL_DIR, pipeline_config, read_labels, read_phrases
from ppmlm.identifiers.ner.registry import NERError, register_ner
from ppmlm.identifiers.ner.spacy_backend import SpacyNER
from ppmlm.identifiers.profiles import DEFAULT_PROFILE

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


# words a place's name keeps in lower case after its first word ("Dar es Salaam", "Frankfurt am Main")
_PARTICLES = frozenset("a al am an and at d da das de del der des di do dos du e el en es im la las le les los of "
                       "on sur the upon van von y".split())


def _capitalised_forms(phrase: str) -> set[str]:
    """A lower-case place name as texts write it capitalised: in title case, with its particles in lower case,
    and in capitals."""
    first, *rest = phrase.title().split(" ")
    particles = " ".join([first, *(word.lower() if word.lower() in _PARTICLES else word for word in rest)])
    return {phrase.title(), particles, phrase.upper()}


def build_rules_pipeline(model_dir: str | Path = DEFAULT_MODEL_DIR, profile: str = DEFAULT_PROFILE) -> SpacyNER:
    """The default backend from a directory laid out like `ner_models/clinical_en` (see its README).

    Components, in order: regex rules, token patterns and phrase gazetteers, place names, context
    patterns, the places' mending once more, the name gazetteer (each keeps the spans of those before it); then the
    statistical NER, which predicts around their spans; then the names listed among the names found.
    """
    model_dir = Path(model_dir)
    config = pipeline_config(model_dir, profile)
    model = config["spacy_model"]
    try:
        nlp = spacy.load(model, exclude=config.get("exclude", []), disable=config.get("disable", []))
    except OSError as error:
        raise NERError(f"spaCy model {model!r} named in {model_dir / 'pipeline.json'} is not installed: {error}") from error
    first = "ner" if "ner" in nlp.pipe_names else None

    def add_regex_ruler(rules: str, before: str | None = first) -> None:
        nlp.add_pipe("ppmlm_regex_ruler", name=f"ppmlm_{Path(rules).stem}", before=before,
                     config={"path": str(model_dir / rules), "profile": profile})

    ruler_config = {"overwrite_ents": False, "phrase_matcher_attr": "LOWER"}
    ruler = nlp.add_pipe("entity_ruler", before=first, config=ruler_config)
    ruler.from_disk(model_dir / config["token_patterns"])
    for file_name, label in config.get("gazetteers", {}).items():
        ruler.add_patterns([{"label": label, "pattern": x, "id": f"{GAZETTEER}{file_name}"}
                            for x in read_phrases(model_dir / file_name)])
    if config.get("capitalised_gazetteers"):  # "from Galway", "FROM REVERE", never "revere" or "galway"
        capitalised = nlp.add_pipe("entity_ruler", name="capitalised_gazetteers", before=first,
                                   config={"overwrite_ents": False, "phrase_matcher_attr": "ORTH"})
        for file_name, label in config["capitalised_gazetteers"].items():
            capitalised.add_patterns([{"label": label, "pattern": written, "id": f"{GAZETTEER}{file_name}"}
                                      for x in read_phrases(model_dir / file_name) for written in _capitalised_forms(x)])
    # the regex rules run first, but join the pipeline once the rulers hold their phrases: spaCy runs the pipes
    # before a ruler over each of its phrase patterns, and 25,000 phrases through the regex rules cost seconds
    add_regex_ruler(config["regex_patterns"], before="entity_ruler")
    if config.get("place_names"):
        nlp.add_pipe("ppmlm_place_names", before=first, config={"model_dir": str(model_dir), "config": config["place_names"]})
    context = config.get("context_patterns") or []
    for rules in [context] if isinstance(context, str) else context:  # one component per file, in order
        add_regex_ruler(rules)
    if config.get("place_names") and context:
        nlp.add_pipe("ppmlm_place_mending", before=first, config={"model_dir": str(model_dir), "config": config["place_names"]})
    eponym_nouns = config.get("filters", {}).get("eponym_nouns", [])
    if config.get("name_gazetteer"):
        nlp.add_pipe("ppmlm_name_gazetteer", before=first, config={
            "model_dir": str(model_dir), "config": config["name_gazetteer"], "eponym_nouns": eponym_nouns})
    if first is not None:
        nlp.add_pipe("ppmlm_block_rule_ents", before=first)
        nlp.add_pipe("ppmlm_restore_rule_ents", after=first)
        if config.get("name_lists"):
            nlp.add_pipe("ppmlm_name_lists", after="ppmlm_restore_rule_ents",
                         config={"model_dir": str(model_dir), "config": config["name_lists"]})
    labels = read_labels(model_dir / config["labels"])
    filters = Filters(config["filters"], model_dir) if config.get("filters") else None
    name = f"default:{model_dir.name}" + ("" if profile == DEFAULT_PROFILE else f"@{profile}")
    return SpacyNER(nlp, labels, name=name, filters=filters, spec=(f"default:{model_dir}", profile))


@register_ner("default", profiles=True)
def _default_backend(arg: str | None, profile: str = DEFAULT_PROFILE) -> SpacyNER:
    """Our pipeline; `default:DIR` builds it from another directory with the same layout."""
    return build_rules_pipeline(arg or DEFAULT_MODEL_DIR, profile)
