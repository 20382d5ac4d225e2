"""Name -> attribute inversion (the KART framework's model-inversion attack, Nakamura et al. 2020, section 4.3).

The attacker knows a patient's name and asks the shared model for what it learnt about them: a template such as
"{name} has {attribute}." is filled with the name, the attribute slot is masked, and every candidate attribute is
ranked by the model's likelihood of filling the slot with it. For each audited user with a known name and known
attributes, the audit ranks each true attribute among all candidates and reports how often it lands in the top
1, 10 and 100, for members (trained on) and for audit non-members (never seen: the baseline, which only knows
the language). KART found that training on anonymised text drives top-100 accuracy to 0.

- Name: the most frequent word of the user's NAME spans (gold spans of `audit.identifiers_from` when the corpus
  has them, else the training blacklist's NER spans, which cover members only) that no other audited user writes.
- Attributes: the user's most frequent indirect identifiers (words fewer than k audited users write, as in the
  identifier-count attack), alphabetic, outside every direct-identifier span: conditions, occupations, drugs,
  pets, places the user alone mentions. Candidates: every such word of every user the attack audits.
- Score of a candidate of T subword tokens: the slot holds T mask tokens and the score is the sum of the T
  log-probabilities of its tokens at their positions, all masked at once (KART's product of per-position
  posteriors; one forward pass per template and candidate length scores every candidate), averaged over the
  templates. A true attribute's rank is 1 + the number of candidates scoring higher, the user's other true
  attributes left out of the race (a filtered rank).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

import numpy as np
import torch
import yaml
from scipy.stats import binomtest

from ppmlm.audit.attacks import with_interval
from ppmlm.audit.scoring import masked_log_probs
from ppmlm.errors import ConfigError, PPMLMError
from ppmlm.identifiers.blacklist import gold_spans, words_in_spans
from ppmlm.identifiers.labels import NAME

TEMPLATES_FILE = Path(__file__).with_name("templates.yaml")  # the packaged defaults, one list per domain
TOP_K = (1, 10, 100)
NAME_SLOT, ATTRIBUTE_SLOT = "{name}", "{attribute}"


@cache
def default_templates() -> dict[str, tuple[str, ...]]:
    return {domain: tuple(templates) for domain, templates in yaml.safe_load(TEMPLATES_FILE.read_text()).items()}


@dataclass(frozen=True)
class InversionSettings:
    """`audit.inversion`. `templates`: a domain of templates.yaml (clinical, legal) or a list of templates
    holding {name} and {attribute} once each."""

    enabled: bool = True
    templates: str | tuple[str, ...] = "clinical"
    max_users_per_side: int | None = None  # None: every audited user with a name and attributes
    attributes_per_user: int = 3

    @classmethod
    def parse(cls, section) -> "InversionSettings":
        if section is None:
            return cls()
        if isinstance(section, InversionSettings):
            return section
        if not isinstance(section, Mapping):
            raise ConfigError(f"audit.inversion={section!r}: expected a mapping with keys enabled, templates, "
                              "max_users_per_side, attributes_per_user")
        unknown = set(section) - set(asdict(cls()))
        if unknown:
            raise ConfigError(f"audit.inversion.{sorted(unknown)[0]}: unknown key; allowed: {', '.join(asdict(cls()))}")
        values = {**asdict(cls()), **dict(section)}
        templates = "clinical" if values["templates"] == "auto" else values["templates"]  # auto: see AuditConfig
        if isinstance(templates, str):
            if templates not in default_templates():
                raise ConfigError(f"audit.inversion.templates={templates!r}: choose a domain of {TEMPLATES_FILE.name} "
                                  f"({', '.join(default_templates())}) or give a list of templates")
        else:
            templates = tuple(templates)
            bad = next((t for t in templates if not isinstance(t, str) or t.count(NAME_SLOT) != 1
                        or t.count(ATTRIBUTE_SLOT) != 1), None) if templates else "an empty list"
            if bad is not None:
                raise ConfigError(f"audit.inversion.templates: {bad!r} is not a template holding {NAME_SLOT} and "
                                  f"{ATTRIBUTE_SLOT} once each")
        for key, least in (("max_users_per_side", 1), ("attributes_per_user", 1)):
            value = values[key]
            if not (value is None and key == "max_users_per_side") and (not isinstance(value, int) or value < least):
                raise ConfigError(f"audit.inversion.{key}={value!r}: expected an integer of at least {least}"
                                  + (" or null" if key == "max_users_per_side" else ""))
        return cls(bool(values["enabled"]), templates, values["max_users_per_side"], values["attributes_per_user"])

    @property
    def template_list(self) -> tuple[str, ...]:
        return default_templates()[self.templates] if isinstance(self.templates, str) else self.templates


def candidate_tokens(tokenizer, texts: list[str]) -> list[tuple[int, ...]]:
    """Each text's subword ids as it reads after a space (BPE tokenizers mark word starts; WordPiece ignores it)."""
    return [tuple(ids) for ids in tokenizer([" " + text for text in texts], add_special_tokens=False)["input_ids"]]


@torch.inference_mode()
def slot_scores(model, tokenizer, contexts: list[tuple[str, str]], candidates: list[tuple[int, ...]],
                batch_size: int = 16) -> np.ndarray:
    """Scores (contexts x candidates): for context (before, after) and a candidate of T tokens, the summed
    log-probability of its tokens when T mask tokens stand between `before` and `after`."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    by_length: dict[int, list[int]] = defaultdict(list)
    for i, ids in enumerate(candidates):
        by_length[len(ids)].append(i)
    by_length.pop(0, None)
    ids_of = {length: torch.tensor([candidates[i] for i in indices], device=device) for length, indices in by_length.items()}
    rows = [(c, length) for c in range(len(contexts)) for length in sorted(by_length)]
    scores = np.full((len(contexts), len(candidates)), -np.inf)
    try:
        for begin in range(0, len(rows), batch_size):
            batch = rows[begin : begin + batch_size]
            texts = [f"{contexts[c][0].rstrip()} {tokenizer.mask_token * length}{contexts[c][1]}" for c, length in batch]
            encoded = tokenizer(texts, padding=True, return_tensors="pt")
            slots = encoded["input_ids"] == tokenizer.mask_token_id
            if slots.sum(1).tolist() != [length for _, length in batch]:
                raise PPMLMError("an inversion template or name holds the tokenizer's mask token")
            log_probs = masked_log_probs(model, encoded["input_ids"].to(device), encoded["attention_mask"].to(device),
                                         slots.to(device))
            offset = 0
            for c, length in batch:  # rows of log_probs: each sequence's slot positions, in order
                slot = log_probs[offset : offset + length]
                summed = slot[torch.arange(length, device=device), ids_of[length]].sum(-1)
                scores[c, by_length[length]] = summed.double().cpu().numpy()
                offset += length
    finally:
        model.train(was_training)
    return scores


def name_spans(corpus, identifiers_from: str | None, blacklist) -> tuple[dict, str]:
    """Direct-identifier spans per document and where they come from: the gold column the audit checks leaks
    against (`identifiers_from`: auto reads column phi), else the training blacklist's (members only)."""
    column = "phi" if identifiers_from == "auto" else identifiers_from
    if column is not None and column in corpus.column_names:
        return gold_spans(corpus, column), f"gold spans of corpus column {column!r}"
    return blacklist.spans, "the training blacklist's spans (members only)"


@dataclass
class Target:
    user: str
    member: bool
    name: str  # as written in the user's notes
    attributes: list[str]  # keys, most frequent first


def inversion_targets(corpus, roles: dict[str, bool], spans: dict, segmenter, reader, degree: dict[str, int], k: int,
                      attributes_per_user: int) -> tuple[list[Target], list[str]]:
    """The users of `roles` with a name and attributes (see the module's docstring), and every candidate attribute."""
    names: dict[str, Counter] = defaultdict(Counter)
    written: dict[str, Counter] = defaultdict(Counter)
    attributes: dict[str, Counter] = defaultdict(Counter)
    records = [(u, d, t) for u, d, t in zip(corpus["user_id"], corpus["doc_id"], corpus["text"]) if u in roles]
    for (user, doc_id, text), words in zip(records, segmenter.pipe([t for _, _, t in records])):
        doc_spans = list(spans.get(doc_id, ()))
        direct = words_in_spans(words, doc_spans) if doc_spans else np.zeros(len(words), dtype=bool)
        named = words_in_spans(words, [s for s in doc_spans if s.label == NAME]) if doc_spans else direct
        for i, term in enumerate(words.terms):
            key = reader.key(term)
            if key is None or not key.isalpha() or degree.get(key, 0) >= k:
                continue
            if named[i]:
                names[user][key] += 1
                written[key][text[words.starts[i] : words.ends[i]]] += 1
            elif not direct[i] and len(key) >= 3:
                attributes[user][key] += 1
    targets = [Target(user, roles[user], written[names[user].most_common(1)[0][0]].most_common(1)[0][0],
                      [key for key, _ in sorted(attributes[user].items(), key=lambda item: (-item[1], item[0]))
                       [:attributes_per_user]])
               for user in roles if names[user] and attributes[user]]
    return targets, sorted(set().union(*attributes.values()))


def accuracy(hits: int, pairs: int, confidence: float) -> dict:
    if not pairs:
        return {"value": None, "ci": None}
    low, high = binomtest(hits, pairs).proportion_ci(confidence, method="exact")
    return {"value": hits / pairs, "ci": [float(low), float(high)]}


@dataclass
class InversionProbe:
    """What the inversion asks, the same at every epoch: its targets, the candidates and their tokens, and the
    template sentences (before and after the slot) of every target."""

    targets: list[Target]
    candidates: list[str]
    candidate_ids: list[tuple[int, ...]]
    contexts: list[tuple[str, str]]
    templates: int
    names_from: str


def inversion_probe(tokenizer, corpus, members: list[str], non_members: list[str], blacklist, reader,
                    degree: dict[str, int], k: int, config) -> InversionProbe:
    """The probe of the audited users (see the module's docstring); `config` is the AuditConfig."""
    settings = config.inversion
    spans, source = name_spans(corpus, config.identifiers_from, blacklist)
    roles = {**{u: True for u in members}, **{u: False for u in non_members}}
    targets, candidates = inversion_targets(corpus, roles, spans, blacklist.segmenter, reader, degree, k,
                                            settings.attributes_per_user)
    if settings.max_users_per_side is not None:
        targets = [target for member in (True, False)
                   for target in [t for t in targets if t.member == member][: settings.max_users_per_side]]
    templates = settings.template_list
    contexts = [template.replace(NAME_SLOT, target.name).partition(ATTRIBUTE_SLOT)[::2]
                for target in targets for template in templates]
    return InversionProbe(targets, candidates, candidate_tokens(tokenizer, candidates), contexts, len(templates), source)


def inversion_figures(model, tokenizer, probe: InversionProbe, config, pseudonym) -> tuple[dict, list[dict]]:
    """The inversion's figures for epoch-N.json and one row per (user, attribute) for its scores file:
    pseudonymous user, member label, rank and number of candidates (never the name or the attribute)."""
    targets, candidates = probe.targets, probe.candidates
    column_of = {key: i for i, key in enumerate(candidates)}
    # template sentences are a tenth of a chunk long: batches of 8 times the audit's hold no more tokens, in fewer passes
    scores = (slot_scores(model, tokenizer, probe.contexts, probe.candidate_ids, 8 * config.batch_size)
              .reshape(len(targets), probe.templates, len(candidates)).mean(axis=1) if targets else None)
    rows = []
    for t, target in enumerate(targets):
        truth = [column_of[key] for key in target.attributes]
        for column in truth:
            others = np.delete(scores[t], [c for c in truth if c != column])
            rows.append({"user": pseudonym("user", target.user), "member": int(target.member),
                         "rank": int((others > scores[t, column]).sum()) + 1, "candidates": len(others)})
    figures = {"templates": probe.templates, "candidates": len(candidates), "names_from": probe.names_from,
               "attributes_per_user": config.inversion.attributes_per_user}
    for side, member in (("member", 1), ("non_member", 0)):
        ranks = [row["rank"] for row in rows if row["member"] == member]
        figures[side] = {"users": sum(target.member == bool(member) for target in targets), "pairs": len(ranks),
                         **{f"top_{top}": accuracy(sum(rank <= top for rank in ranks), len(ranks), config.confidence)
                            for top in TOP_K},
                         "median_rank": float(np.median(ranks)) if ranks else None}
    figures["chance"] = {f"top_{top}": min(top, len(candidates)) / len(candidates) if candidates else None for top in TOP_K}
    return figures, rows


def inversion_summary(inversion: dict | None) -> list[tuple[str, str]]:
    """(measure, value) rows for the report and the card: counts and rates only."""
    if inversion is None:
        return [("Name → attribute inversion (KART)", "not run (audit.inversion.enabled is false)")]

    def side(figures: dict) -> str:
        if not figures["pairs"]:
            return "no user with a known name and attribute"
        return " / ".join(with_interval(figures[f"top_{top}"]["value"], figures[f"top_{top}"]["ci"]) for top in TOP_K) \
            + f" ({figures['pairs']} attributes of {figures['users']} users)"

    chance = " / ".join(f"{inversion['chance'][f'top_{top}']:.3f}" for top in TOP_K) if inversion["candidates"] else "n/a"
    return [("Name → attribute inversion (KART), members: top-1 / top-10 / top-100 accuracy", side(inversion["member"])),
            ("Name → attribute inversion, non-members (baseline): top-1 / top-10 / top-100", side(inversion["non_member"])),
            (f"Name → attribute inversion, blind guess among {inversion['candidates']} candidates "
             f"({inversion['templates']} templates; names from {inversion['names_from']})", chance)]
