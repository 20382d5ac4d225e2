"""The privacy scores: every occurrence of every identifier in the members' chunks, asked one question each,
"masked here, does the model predict it?", and the non-members' chunks asked the same as the baseline.

An occurrence is a blacklist term's word where it is written, or a gold span's words (masked together: the whole
identifier is hidden, not one of its words beside the others). The probe masks each occurrence's whole words and
reads the model's guess at each; occurrences far apart in a chunk share a masked input (`audit.probe_gap_words`):
a mask token says nothing of the word it hides, so one masked occurrence cannot give another away; it only takes its
words out of the other's context, and beyond a few words that context hardly moves a guess (docs/audit.md measures
what the packing loses against one occurrence per input).

Probing every member chunk costs passes in proportion to the identifiers the members wrote, so by default it runs
at the final epoch of a run and in `ppmlm audit` (`audit.privacy_probe: final`); the audits before it read the
same figures from the random maskings of the sampled chunks, which hide every word at least once (K >= 7).

Besides its own occurrences, the model may write an identifier elsewhere: in the place of another identifier, or
in ordinary text. Both reveal it. `leaked` counts the audited identifiers predicted anywhere in the members'
masked chunks; `predicted_where` says where; `leaked_elsewhere` counts the identifiers predicted although they do
not occur in the chunks probed, explained by kind, category and place (`elsewhere`). Counts only, never a term.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections import Counter, defaultdict
from dataclasses import dataclass

import numpy as np

from ppmlm.audit.identifiers import Identifiers, leak_share, never_predicted
from ppmlm.audit.sampling import Sample, user_chunks
from ppmlm.audit.scoring import score_samples
from ppmlm.identifiers.blacklist import DIRECT, INDIRECT

OWN, ANOTHER, ORDINARY = "own_occurrence", "another_identifier", "ordinary_text"  # where an identifier was predicted

ChunkId = tuple[str, int]  # (document id, chunk index in the document)


def chunk_id(sample: Sample) -> ChunkId:
    return sample.doc_id, sample.chunk


@dataclass(frozen=True)
class Occurrence:
    """An identifier where it occurs in a chunk: the chunk's words it covers (a term's one word, a gold span's words),
    masked together, and the identifier key of each."""

    chunk: ChunkId
    words: tuple[int, ...]
    keys: tuple[str, ...]
    label: str | None = None  # the gold span's category
    unprotected: bool = False  # (gold spans) training left a word of it unprotected


class ChunkKeys:
    """The key of every word of the chunks seen so far (WordReader.key), computed once per chunk."""

    def __init__(self, reader):
        self.reader = reader
        self._keys: dict[ChunkId, list[str | None]] = {}

    def __call__(self, sample: Sample) -> list[str | None]:
        found = self._keys.get(chunk_id(sample))
        if found is None:
            found = self._keys[chunk_id(sample)] = [self.reader.key(term) for term in sample.terms]
        return found


def find_occurrences(chunks: list[Sample], identifiers: Identifiers, keys: ChunkKeys) -> list[Occurrence]:
    """Every occurrence of `identifiers` in `chunks`, in chunk order: each maskable word whose key is an identifier,
    or, for gold spans, each span's maskable words in the chunk (a span cut by a chunk boundary occurs in both)."""
    found = []
    for chunk in chunks:
        where, chunk_keys = chunk_id(chunk), keys(chunk)
        maskable = set(chunk.maskable_words.tolist())
        if identifiers.spans is None:
            found += [Occurrence(where, (w,), (chunk_keys[w],)) for w in sorted(maskable) if chunk_keys[w] in identifiers.kinds]
            continue
        doc_spans = identifiers.spans.get(chunk.doc_id, ())
        first, last = chunk.first_word, chunk.first_word + len(chunk.terms)
        longest = max((span.stop - span.first for span in doc_spans), default=0)
        starts = [span.first for span in doc_spans]
        for span in doc_spans[bisect_left(starts, first - longest) : bisect_left(starts, last)]:
            words = tuple(w - first for w in range(max(span.first, first), min(span.stop, last))
                          if w - first in maskable and chunk_keys[w - first] is not None)
            if words:
                found.append(Occurrence(where, words, tuple(chunk_keys[w] for w in words), span.label, span.unprotected))
    return found


def probe_plans(chunks: list[Sample], occurrences: list[Occurrence], gap: int | None) -> list[list[np.ndarray]]:
    """The masked inputs of the probe, per chunk (a plan for `score_samples`): every occurrence masked once, occurrences
    at least `gap` words apart sharing an input (first fit, in word order; None: one occurrence per input). The same
    words occurring for two answer keys are masked once."""
    by_chunk: dict[ChunkId, set[tuple[int, ...]]] = defaultdict(set)
    for occurrence in occurrences:
        by_chunk[occurrence.chunk].add(occurrence.words)
    plans = []
    for chunk in chunks:
        rows: list[list[int]] = []  # the masked words of each input, sorted
        for words in sorted(by_chunk.get(chunk_id(chunk), ())):
            row = next((row for row in rows if gap is not None and _apart(row, words, gap)), None)
            if row is None:
                rows.append(list(words))
            else:
                for word in words:
                    insort(row, word)
        plans.append([np.array(row, dtype=np.int64) for row in rows])
    return plans


def _apart(row: list[int], words: tuple[int, ...], gap: int) -> bool:
    """Whether every word of `words` is at least `gap` words from every word of `row` (sorted)."""
    for word in words:
        before, after = bisect_right(row, word - gap), bisect_left(row, word + gap)
        if after > before:  # a word of the row lies within gap - 1 of this one
            return False
    return True


class Guesses:
    """What the model guessed at each masked word of some chunks (over all the inputs that masked it), as keys."""

    def __init__(self, reader):
        self.reader = reader
        self.at: dict[tuple[ChunkId, int], Counter] = defaultdict(Counter)
        self.original: dict[tuple[ChunkId, int], str | None] = {}

    def add(self, samples: list[Sample], results, keys: ChunkKeys) -> "Guesses":
        for sample, result in zip(samples, results):
            where, sample_keys = chunk_id(sample), keys(sample)
            for masking in result.predictions:
                for prediction in masking:
                    position = (where, prediction.word)
                    self.at[position][self.reader.predicted(prediction, sample.terms[prediction.word])] += 1
                    self.original[position] = sample_keys[prediction.word]
        return self

    def merged(self, other: "Guesses") -> "Guesses":
        both = Guesses(self.reader)
        for guesses in (self, other):
            for position, counts in guesses.at.items():
                both.at[position].update(counts)
            both.original.update(guesses.original)
        return both


def leak_figures(identifiers: Identifiers, occurrences: list[Occurrence], probed: Guesses, seen: Guesses,
                 confidence: float) -> tuple[dict, Counter, dict]:
    """The figures of one side (members or non-members) against one answer key: identifiers (distinct) predicted
    anywhere in `seen`, and occurrences whose identifier the model predicted at one of its words when `probed` masked
    them; each share never predicted with its exact binomial interval, for all, per kind and per category. Also returns
    how many times each identifier was predicted, and the identifiers predicted by where (OWN, ANOTHER, ORDINARY)."""
    scope = {key for occurrence in occurrences for key in occurrence.keys}
    hits = [any(key in probed.at.get((o.chunk, w), ()) for w, key in zip(o.words, o.keys)) for o in occurrences]
    positions = {(o.chunk, w) for o in occurrences for w in o.words}
    where: dict[str, Counter] = {OWN: Counter(), ANOTHER: Counter(), ORDINARY: Counter()}
    for position, guessed in seen.at.items():
        for key, times in guessed.items():
            if key in identifiers.kinds:
                place = ORDINARY if position not in positions else OWN if key == seen.original[position] else ANOTHER
                where[place][key] += times
    predicted = where[OWN] + where[ANOTHER] + where[ORDINARY]
    leaked = {key for key in scope if predicted[key]}
    figures = {**leak_share(scope, leaked, confidence),
               **{kind: leak_share(_of_kind(scope, identifiers, kind), _of_kind(leaked, identifiers, kind), confidence)
                  for kind in (DIRECT, INDIRECT)}}
    if identifiers.labels:
        figures["by_label"] = {label: leak_share(_of_label(scope, identifiers, label), _of_label(leaked, identifiers, label),
                                                 confidence) for label in _labels(identifiers)}
    figures["occurrences"] = _occurrence_shares(identifiers, occurrences, hits, confidence)
    return figures, predicted, where


def _occurrence_shares(identifiers: Identifiers, occurrences: list[Occurrence], hits: list[bool], confidence: float) -> dict:
    figures = {"probed": len(occurrences), "predicted": sum(hits), **never_predicted(len(occurrences), sum(hits), confidence)}
    groups = ({f"{kind}": [any(kind in identifiers.kinds[key] for key in o.keys) for o in occurrences]
               for kind in (DIRECT, INDIRECT)} if identifiers.spans is None else {})
    for name, members in groups.items():
        found = sum(hit for hit, member in zip(hits, members) if member)
        figures[name] = {"probed": sum(members), "predicted": found, **never_predicted(sum(members), found, confidence)}
    if identifiers.spans is not None:
        by_label = {}
        for label in sorted({o.label for o in occurrences}):
            members = [o.label == label for o in occurrences]
            found = sum(hit for hit, member in zip(hits, members) if member)
            by_label[label] = {"probed": sum(members), "predicted": found,
                               **never_predicted(sum(members), found, confidence)}
        figures["by_label"] = by_label
    return figures


def _of_kind(keys: set[str], identifiers: Identifiers, kind: str) -> set[str]:
    return {key for key in keys if kind in identifiers.kinds.get(key, ())}


def _of_label(keys: set[str], identifiers: Identifiers, label: str) -> set[str]:
    return {key for key in keys if label in identifiers.labels.get(key, ())}


def _labels(identifiers: Identifiers) -> list[str]:
    return sorted(set().union(*identifiers.labels.values()))


def elsewhere_figures(identifiers: Identifiers, scope: set[str], where: dict) -> dict:
    """The identifiers predicted that do not occur in the chunks probed (`leaked_elsewhere`): how many of each kind and
    category, how many the model wrote in the place of another identifier and how many in ordinary text (an
    identifier may be in both), and how many times. Counts only."""
    away = {key for counts in where.values() for key in counts if key not in scope}
    figures = {"identifiers": len(away), **{kind: len(_of_kind(away, identifiers, kind)) for kind in (DIRECT, INDIRECT)}}
    if identifiers.labels:
        figures["by_label"] = {label: len(_of_label(away, identifiers, label)) for label in _labels(identifiers)
                               if _of_label(away, identifiers, label)}
    for place in (ANOTHER, ORDINARY):
        figures[place] = len({key for key in where[place] if key in away})
    figures["predictions"] = {place: sum(times for key, times in where[place].items() if key in away)
                              for place in (ANOTHER, ORDINARY)}
    return figures


def side_figures(identifiers: Identifiers, occurrences: list[Occurrence], probed: Guesses, seen: Guesses,
                 confidence: float, training_occurrences: dict[str, int] | None = None) -> dict:
    """The privacy figures of one answer key on one side (see the module's docstring); `training_occurrences` (members
    only) adds the regurgitation pairs and the explanation of what was predicted elsewhere."""
    figures, predicted, where = leak_figures(identifiers, occurrences, probed, seen, confidence)
    if training_occurrences is None:
        return figures
    scope = {key for occurrence in occurrences for key in occurrence.keys}
    elsewhere = elsewhere_figures(identifiers, scope, where)
    pairs = sorted((training_occurrences.get(key, 0), times) for key, times in predicted.items())
    return {
        **figures,
        "predicted_where": {place: len(where[place]) for place in (OWN, ANOTHER, ORDINARY)},
        "leaked_elsewhere": elsewhere["identifiers"],
        "elsewhere": elsewhere,
        "ngram_identifiers_not_scored": identifiers.ngrams_not_scored,
        "regurgitation": {"training_occurrences": [p[0] for p in pairs], "predictions": [p[1] for p in pairs]},
    }


def missed_by_blacklist(identifiers: Identifiers, training: Identifiers, occurrences: list[Occurrence], probed: Guesses,
                        seen: Guesses) -> dict:
    """The independent identifiers in the probed member chunks that training left unprotected, and how many of those
    the model predicted: keys (gold spans: with an occurrence unprotected somewhere in the members' documents; another
    blacklist: not a one-word term of the training blacklist), and, for gold spans, the occurrences unprotected there."""
    scope = {key for occurrence in occurrences for key in occurrence.keys}
    missed = {key for key in scope if (key in identifiers.unprotected if identifiers.unprotected is not None
                                       else key not in training.kinds)}
    predicted = {key for counts in seen.at.values() for key in counts}
    result = {"identifiers": len(missed), "leaked": len(missed & predicted)}
    if identifiers.spans is not None:
        exposed = [o for o in occurrences if o.unprotected]
        result["occurrences"] = len(exposed)
        result["occurrences_predicted"] = sum(any(key in probed.at.get((o.chunk, w), ()) for w, key in zip(o.words, o.keys))
                                              for o in exposed)
    return result


@dataclass
class AnswerKeys:
    """What the privacy figures are graded against: the training blacklist's identifiers and, when the auditor gives
    them (`audit.identifiers_from`), independent ones; gold spans are read in the members' documents and, for the
    baseline, in the audited non-members' (`independent_baseline`; None: `independent` serves both sides, as a
    blacklist's terms do)."""

    training: Identifiers
    independent: Identifiers | None = None
    source: str | None = None
    independent_baseline: Identifiers | None = None

    def by_side(self) -> dict[str, dict[bool, Identifiers]]:
        keys = {"training": {True: self.training, False: self.training}}
        if self.independent is not None:
            keys["independent"] = {True: self.independent, False: self.independent_baseline or self.independent}
        return keys


@dataclass
class Probe:
    """The chunks the privacy figures are measured on (members' and non-members'), the occurrences of each answer key
    in them ((key name, member) -> occurrences) and, when every occurrence is probed, the masked inputs that do it."""

    chunks: list[Sample]
    occurrences: dict[tuple[str, bool], list[Occurrence]]
    plans: list[list[np.ndarray]] | None = None  # None: measured on the audit's random maskings of these chunks
    gap: int | None = None


def locate(answer: AnswerKeys, chunks: list[Sample], keys: ChunkKeys, probe: bool = False, gap: int | None = None) -> Probe:
    """The occurrences of every answer key in `chunks`; with `probe`, the masked inputs that probe them all."""
    occurrences = {(name, member): find_occurrences([c for c in chunks if c.member == member], identifiers, keys)
                   for name, sides in answer.by_side().items() for member, identifiers in sides.items()}
    plans = probe_plans(chunks, [o for found in occurrences.values() for o in found], gap) if probe else None
    return Probe(chunks, occurrences, plans, gap)


def privacy_blocks(answer: AnswerKeys, probe: Probe, probed: dict[bool, Guesses], seen: dict[bool, Guesses],
                   training_occurrences: dict[str, int], confidence: float) -> tuple[dict, dict | None]:
    """epoch-N.json's `privacy` and `privacy_independent` (None without independent identifiers): each answer key's
    figures on the members, the non-members' as `baseline`, and how they were measured (`probe`)."""
    how = {"every_occurrence": probe.plans is not None,
           "member_chunks": sum(chunk.member for chunk in probe.chunks),
           "non_member_chunks": sum(not chunk.member for chunk in probe.chunks),
           "masked_inputs": sum(len(plan) for plan in probe.plans) if probe.plans is not None else None,
           "gap_words": probe.gap if probe.plans is not None else None}
    blocks = {}
    for name, sides in answer.by_side().items():
        members = probe.occurrences[(name, True)]
        figures = side_figures(sides[True], members, probed[True], seen[True], confidence, training_occurrences)
        figures["baseline"] = side_figures(sides[False], probe.occurrences[(name, False)], probed[False], seen[False],
                                           confidence)
        figures["probe"] = how
        if name == "independent":
            figures = {"source": answer.source, **figures,
                       "missed_by_blacklist": missed_by_blacklist(sides[True], answer.training, members, probed[True],
                                                                  seen[True])}
        blocks[name] = figures
    return blocks["training"], blocks.get("independent")


def probes_everything(config, final: bool) -> bool:
    """Whether this audit probes every occurrence in every member chunk (`audit.privacy_probe`: final, all, sampled)."""
    return config.privacy_probe == "all" or (config.privacy_probe == "final" and final)


def every_chunk_probe(corpus, split, chunks: dict[str, list[Sample]], segmenter, tokenizer, answer: AnswerKeys,
                      keys: ChunkKeys, config) -> Probe:
    """The probe of every chunk of every member (training cut them all) and of the audited non-members (`chunks`: every
    chunk of each audited user; the members not audited are cut here)."""
    present = set(corpus["user_id"])
    missing = {user: True for user in split.members if user in present and user not in chunks}
    more = {}
    if missing:
        notes = [text for user, text in zip(corpus["user_id"], corpus["text"]) if user in missing]
        with segmenter.remembering(notes) as remembering:
            more = user_chunks(corpus, missing, remembering, tokenizer, config.max_length)
    every = {**chunks, **more}
    probed = [chunk for user in sorted(every) for chunk in every[user]]
    return locate(answer, probed, keys, probe=True, gap=config.probe_gap_words)


def measure_privacy(model, answer: AnswerKeys, probe: Probe, samples: list[Sample], results, keys: ChunkKeys,
                    training_occurrences: dict[str, int], config, passes: dict) -> tuple[dict, dict | None]:
    """`privacy` and `privacy_independent` of one model: from the random maskings of the audited chunks (`samples`,
    their `results`), and, when `probe` has masked inputs, from running the model over them too."""
    seen = {member: Guesses(keys.reader).add([s for s in samples if s.member == member],
                                             [r for s, r in zip(samples, results) if s.member == member], keys)
            for member in (True, False)}
    probed = seen
    if probe.plans is not None:
        found = score_samples(model, probe.chunks, probe.plans, description="privacy probe", **passes)
        probed = {member: Guesses(keys.reader).add([c for c in probe.chunks if c.member == member],
                                                   [r for c, r in zip(probe.chunks, found) if c.member == member], keys)
                  for member in (True, False)}
        seen = {member: probed[member].merged(seen[member]) for member in seen}
    return privacy_blocks(answer, probe, probed, seen, training_occurrences, config.confidence)


def privacy_summary(figures: dict) -> list[tuple[str, str]]:
    """(measure, value) rows for the report and the card: how the privacy scores were measured, the occurrences
    predicted on members and on non-members, where the model wrote identifiers, and what `leaked_elsewhere` holds.
    Counts only; audits from before the probe give the one row they can."""
    privacy = figures["privacy"]
    how = privacy.get("probe")
    if how is None:
        return [("Identifiers predicted outside the audited chunks", str(privacy["leaked_elsewhere"]))]
    if how["every_occurrence"]:
        gap = ("one occurrence per input" if how["gap_words"] is None
               else f"occurrences at least {how['gap_words']} words apart share one")
        scope = (f"every identifier occurrence of every member chunk ({how['member_chunks']} chunks) and, as the baseline, "
                 f"of the audited non-members' chunks ({how['non_member_chunks']}): {how['masked_inputs']} masked inputs "
                 f"({gap}), with the random maskings of the audited chunks")
    else:
        scope = (f"the random maskings of the audited chunks only ({how['member_chunks']} member, {how['non_member_chunks']} "
                 "non-member chunks), which hide every word at least once: a sample. The final audit of a run and "
                 "`ppmlm audit` probe every occurrence of every member chunk (audit.privacy_probe)")
    rows = [("Privacy scores measured on", scope)]
    blocks = [("training blacklist", privacy)]
    if figures.get("privacy_independent"):
        blocks.append(("independent identifiers", figures["privacy_independent"]))
    for name, block in blocks:
        members, baseline = block["occurrences"], block["baseline"]["occurrences"]
        rows.append((f"Identifier occurrences predicted where they occur ({name}): members / non-members (baseline)",
                     f"{_occurrences_text(members)} / {_occurrences_text(baseline)}"))
    where = privacy["predicted_where"]
    rows.append(("Identifiers predicted, by where: at an occurrence of their own / in another identifier's place / in "
                 "ordinary text (one identifier may be in several)",
                 f"{where[OWN]} / {where[ANOTHER]} / {where[ORDINARY]}"))
    for name, block in blocks:
        rows.append((f"Identifiers predicted outside the probed chunks ({name})", elsewhere_text(block)))
    return rows


def _occurrences_text(occurrences: dict) -> str:
    interval = occurrences.get("score_ci")
    never = f"{occurrences['score']:.4f}" + (f" [{interval[0]:.4f}, {interval[1]:.4f}]" if interval else "")
    return f"{occurrences['predicted']} of {occurrences['probed']} (never predicted: {never})"


def elsewhere_text(block: dict) -> str:
    """`leaked_elsewhere` explained: by kind and category, and where the model wrote them."""
    away = block.get("elsewhere")
    if not away or not away["identifiers"]:
        return str(block["leaked_elsewhere"])
    labels = ", ".join(f"{label} {count}" for label, count in (away.get("by_label") or {}).items())
    times = away["predictions"]
    return (f"{away['identifiers']}: direct {away[DIRECT]}, indirect {away[INDIRECT]}"
            + (f"; categories {labels}" if labels else "")
            + f"; in another identifier's place {away[ANOTHER]} ({times[ANOTHER]} times), in ordinary text "
              f"{away[ORDINARY]} ({times[ORDINARY]} times)")
