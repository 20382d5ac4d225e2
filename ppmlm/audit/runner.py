"""`run_audit`: every measure of the audit on one model, written to the audit directory.

One pass of the target model over the audited chunks' maskings feeds every measure (utility, privacy,
identifier-count, loss and likelihood-ratio attacks); one pass of the reference model over the same
maskings feeds the likelihood ratio, and is cached for later epochs. With a reference, both passes also
cover the population chunks of the reference-calibrated attack (RMIA); the neighbourhood attack adds its
own passes of the target model over neighbours of some chunks.
"""
from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from ppmlm.audit.attacks import all_attack_figures, user_rows_from_samples
from ppmlm.audit.blind import BLIND, blind_scores, users_separated
from ppmlm.audit.config import AuditConfig
from ppmlm.audit.console import epoch_line
from ppmlm.audit.exposure import exposure_figures
from ppmlm.audit.identifiers import AuditorGraph, Identifiers, WordReader, identifier_count, independent_identifiers
from ppmlm.audit.inversion import InversionProbe, inversion_figures, inversion_probe
from ppmlm.audit.metrics import load_metric
from ppmlm.audit.neighbourhood import neighbourhood_losses
from ppmlm.audit.occurrences import AnswerKeys, ChunkKeys, Probe, every_chunk_probe, locate, measure_privacy, probes_everything
from ppmlm.audit.one_run import one_run_figures
from ppmlm.audit.outputs import Pseudonyms, reference_cache, write_atomically, write_epoch, write_jsonl
from ppmlm.audit.policy import SharingPolicy
from ppmlm.audit.report import write_report
from ppmlm.audit.rmia import log_ratio, population_samples, rmia_scores
from ppmlm.audit.sampling import choose_users, lent_users, masking_plan, pick_samples, user_chunks
from ppmlm.audit.scoring import SampleResult, score_samples


@dataclass
class AuditInputs:
    """What the audit of every epoch of a run shares: the users, chunks and maskings it scores (all seeded by
    `audit.seed`, so the same at every epoch), the auditor's graph and identifiers, the inversion's probe. A
    training run prepares them once (`prepare_audit`) and audits each epoch's model with them: on real corpora
    segmenting every audited note again each epoch would cost more than scoring the model. The probe of every member
    chunk (`every_probe`) is prepared by the first audit that probes every occurrence."""

    members: list[str]
    non_members: list[str]
    roles: dict[str, bool]
    available: dict[bool, list[str]]
    lent: int
    chunks_of_user: dict[str, int]
    samples: list
    plans: list
    population: list
    population_plans: list
    generator_state: torch.Tensor  # after the choices above: the neighbourhood attack draws on from there
    reader: WordReader
    graph: AuditorGraph
    k: int
    answer: AnswerKeys  # what the privacy figures are graded against
    chunks: dict[str, list]  # every chunk of each audited user
    chunk_keys: ChunkKeys
    sampled_probe: Probe  # the identifier occurrences of the audited chunks
    blind: list  # the blind baseline's score of each sample
    inversion: InversionProbe | None
    every_probe: Probe | None = None


def prepare_audit(tokenizer, corpus, split, blacklist, config: AuditConfig = AuditConfig(), with_reference: bool = True
                  ) -> AuditInputs:
    """The epoch-independent inputs of `run_audit` (see AuditInputs); `with_reference`: whether the audits will have a
    reference model (the population chunks of RMIA are drawn only then)."""
    generator = torch.Generator().manual_seed(config.seed)
    present = set(corpus["user_id"])
    lent = lent_users(split.population, config.lend_population, config.seed)
    available = {True: [u for u in split.members if u in present],
                 False: [u for u in split.audit_non_members + lent if u in present]}
    non_members = choose_users(available[False], config.max_users_per_side, generator)
    members = choose_users(available[True], config.max_users_per_side or len(non_members), generator)
    roles = {**{u: True for u in members}, **{u: False for u in non_members}}
    audited_notes = [text for user, text in zip(corpus["user_id"], corpus["text"]) if user in roles]
    with blacklist.segmenter.remembering(audited_notes) as segmenter:
        chunks = user_chunks(corpus, roles, segmenter, tokenizer, config.max_length)
        samples = pick_samples(chunks, config.max_chunks_per_user, config.max_tokens_per_user, generator)
        samples, plans = _with_plans(samples, config, generator)
        population, population_plans = [], []
        if with_reference and config.rmia_population_chunks:
            population, population_plans = _with_plans(
                population_samples(chunks, samples, config.rmia_population_chunks, generator), config, generator,
                config.rmia_population_maskings)
        reader = WordReader(tokenizer, segmenter)
        graph = AuditorGraph(corpus, set(split.members), set(split.audit_non_members + lent), segmenter, reader)
        k = config.k or blacklist.stats.get("parameters", {}).get("k", 2)
        answer = _answer_keys(config, corpus, split, non_members, blacklist, reader)
        keys = ChunkKeys(reader)
        return AuditInputs(
            members, non_members, roles, available, len(lent), {user: len(found) for user, found in chunks.items()},
            samples, plans, population, population_plans, generator.get_state(), reader, graph, k, answer, chunks, keys,
            locate(answer, samples, keys), blind_scores(chunks, samples, config.seed),
            inversion_probe(tokenizer, corpus, members, non_members, blacklist, reader, graph.degree, k, config)
            if config.inversion.enabled else None)


def _answer_keys(config: AuditConfig, corpus, split, non_members: list[str], blacklist, reader) -> AnswerKeys:
    """The training blacklist's identifiers and the independent ones of `audit.identifiers_from`; gold spans are read in
    the audited non-members' documents too, for the baseline."""
    training = Identifiers.from_blacklist(blacklist, reader)
    independent = independent_identifiers(config.identifiers_from, corpus, set(split.members), blacklist, reader)
    if independent is None:
        return AnswerKeys(training)
    identifiers, source = independent
    baseline = (independent_identifiers(config.identifiers_from, corpus, set(non_members), blacklist, reader)[0]
                if identifiers.spans is not None else None)
    return AnswerKeys(training, identifiers, source, baseline)


def run_audit(model, tokenizer, corpus, split, blacklist, out_dir, epoch: int, config: AuditConfig = AuditConfig(),
              reference=None, epsilon: dict | None = None, weights: dict[str, str] | None = None,
              policy: SharingPolicy | None = None, canaries: list | None = None, inputs: AuditInputs | None = None,
              dp_settings: dict | None = None, settings: str | None = None, warm_start: dict | None = None,
              final: bool = True) -> dict:
    """Audit `model` (a loaded masked LM) for members (`split.members`) against audit non-members
    (`split.audit_non_members`) of `corpus`; `blacklist` holds the training identifiers, `reference` a
    loaded masked LM for the likelihood-ratio attack (None: that attack is skipped), `epsilon` the DP
    budget spent (e.g. {"rdp": ..., "prv": ..., "delta": ...}) and `dp_settings` the DP-SGD settings behind it (a DP
    checkpoint's privacy.json; both signed with the figures, for the model card), `weights` the sha256 of the files `model`
    was loaded from (`weights_digests`; None: unknown, and `ppmlm push` will not share on this audit), `settings` the
    sha256 of the training settings of the run the model comes from (`settings_digest`; None: outside a run),
    `warm_start` what the public warm start the model started from saw (sources and counts; None: none),
    `policy` the sharing policy whose verdict opens the report (None: the defaults), `canaries` those planted
    (ppmlm.corpus.canaries: exposure canaries in the members' notes, whose exposure is measured, or a one-run plant,
    whose empirical ε is; None: neither), `inputs` those `prepare_audit`
    made for this corpus, split, blacklist, tokenizer and config (None: prepared here), `final` whether this is the
    final audit of a run (or a standalone one): with `audit.privacy_probe: final` only that one probes every identifier
    occurrence of every member chunk.
    Writes epoch-N.json (signed), the scores files and report.html in `out_dir`; returns the figures of
    epoch-N.json."""
    started = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    inputs = inputs or prepare_audit(tokenizer, corpus, split, blacklist, config, with_reference=reference is not None)
    samples, plans, members, non_members = inputs.samples, inputs.plans, inputs.members, inputs.non_members
    population, population_plans = (inputs.population, inputs.population_plans) if reference is not None else ([], [])
    device = next(model.parameters()).device
    devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):  # nothing here may shift the training's random streams
        generator = torch.Generator()
        generator.set_state(inputs.generator_state)
        passes = dict(mask_token_id=tokenizer.mask_token_id, pad_token_id=tokenizer.pad_token_id,
                      batch_size=config.batch_size, progress=config.progress)
        target = score_samples(model, samples + population, plans + population_plans, description=f"audit epoch {epoch}",
                               **passes)
        target, population_target = target[: len(samples)], target[len(samples) :]
        reference_results = population_reference = None
        if reference is not None:
            reference_results = _reference_pass(reference, samples + population, plans + population_plans, out_dir, passes)
            reference_results, population_reference = reference_results[: len(samples)], reference_results[len(samples) :]
        neighbours = config.neighbours_with(reference)
        neighbourhood = (neighbourhood_losses(model, tokenizer, samples, plans, target, config, neighbours, generator, passes)
                         if neighbours else {})

    reader, graph, k = inputs.reader, inputs.graph, inputs.k
    pseudonym = Pseudonyms(out_dir)
    words_by_user, predicted_by_user = _words_and_predictions(samples, target, reader)
    sample_rows = [_sample_row(sample, result, reference_results[i] if reference_results else None, neighbourhood.get(i),
                               pseudonym, config) for i, (sample, result) in enumerate(zip(samples, target))]
    for row, blind in zip(sample_rows, inputs.blind):
        row[f"{BLIND}_score"] = blind
    population_rows = [_population_row(sample, result, reference_result, pseudonym, config)
                       for sample, result, reference_result in zip(population, population_target, population_reference or [])]
    _add_rmia_scores(sample_rows, population_rows, config)
    identifier_scores = {}
    for user in words_by_user:
        identifiers = graph.indirect(words_by_user[user], k)
        count, share = identifier_count(identifiers, predicted_by_user[user])
        identifier_scores[pseudonym("user", user)] = (len(identifiers), count, share)
    user_rows = user_rows_from_samples(sample_rows, identifier_scores)

    probe = inputs.sampled_probe
    if probes_everything(config, final):
        if inputs.every_probe is None:
            inputs.every_probe = every_chunk_probe(corpus, split, inputs.chunks, blacklist.segmenter, tokenizer, inputs.answer,
                                                   inputs.chunk_keys, config)
        probe = inputs.every_probe
    privacy, privacy_independent = measure_privacy(model, inputs.answer, probe, samples, target, inputs.chunk_keys,
                                                   graph.training_occurrences, config, passes)
    inversion, inversion_rows = None, []
    if inputs.inversion is not None:
        inversion, inversion_rows = inversion_figures(model, tokenizer, inputs.inversion, config, pseudonym)
    empirical, canary_rows = one_run_figures(model, tokenizer, canaries, epsilon, config.confidence, pseudonym,
                                             config.batch_size)
    attacks = all_attack_figures(sample_rows, user_rows, config)
    if attacks[BLIND]["user"] is not None:
        attacks[BLIND]["user"]["p_value"] = users_separated(user_rows)
    figures = {
        "epoch": epoch,
        "model": getattr(model.config, "_name_or_path", None) or None,
        "reference": (getattr(reference.config, "_name_or_path", None) or "given model") if reference is not None else None,
        "audited": _sampled(samples, inputs.chunks_of_user, members, non_members, inputs.available, inputs.lent, config,
                            population_rows, neighbourhood),
        "utility": _utility(samples, target, config),
        "privacy": privacy,
        "privacy_independent": privacy_independent,
        "attacks": attacks,
        "attacks_not_run": attacks_not_run(attacks, config, reference is not None, len(population_rows), neighbours),
        "identifier_attack_k": k,
        "inversion": inversion,
        "canaries": exposure_figures(model, tokenizer, canaries if empirical is None else None, config.batch_size),
        "empirical_epsilon": empirical,
        "dp": epsilon,
        "dp_settings": dp_settings,
        "warm_start": warm_start,
        "config": {**asdict(config), "fpr_levels": list(config.fpr_levels)},
        "measured": {"weights": weights, "blacklist": blacklist.digest(), "split": split.digest(),  # sha256, checked by push
                     "settings": settings},
        "seconds": round(time.perf_counter() - started, 2),
    }
    if inversion is not None:
        write_jsonl(out_dir / f"scores-epoch-{epoch}-inversion.jsonl", inversion_rows)
    if empirical is not None:
        write_jsonl(out_dir / f"scores-epoch-{epoch}-canaries.jsonl", canary_rows)
    figures = write_epoch(out_dir, figures, sample_rows, user_rows, population_rows)
    write_report(out_dir, policy)
    print(epoch_line(figures, out_dir), flush=True)
    return figures


def _with_plans(samples, config: AuditConfig, generator, maskings: int | None = None) -> tuple[list, list]:
    """The samples with their masking plans (`maskings` each; None: the audit's), less those with nothing to mask
    (punctuation-only chunks)."""
    plans = [masking_plan(s, maskings or config.maskings, config.mlm_probability, config.mask_each_word, generator)
             for s in samples]
    kept = [(sample, plan) for sample, plan in zip(samples, plans) if plan]
    return [sample for sample, _ in kept], [plan for _, plan in kept]


def _sampled(samples, chunks_of_user: dict, members: list, non_members: list, available: dict, lent: int,
             config: AuditConfig, population_rows: list, neighbourhood: dict) -> dict:
    """What was sampled beside what there was, so a reader can tell an audit of everyone from a sample:
    users audited of those available (audit non-members plus the population users lent), chunks audited
    (less any of punctuation alone: nothing to mask) of all the audited users' chunks, their tokens, and
    the limits that chose them."""
    figures = {"member_users": len(members), "non_member_users": len(non_members)}
    for side, member, users in (("member", True, members), ("non_member", False, non_members)):
        scored = [s for s in samples if s.member == member]
        figures.update({f"{side}_samples": len(scored),
                        f"{side}_chunks_available": sum(chunks_of_user.get(user, 0) for user in users),
                        f"{side}_tokens": int(sum(len(s.input_ids) for s in scored))})
    return {
        **figures, "maskings_per_sample": config.maskings if not config.mask_each_word else "each word",
        "member_users_available": len(available[True]), "non_member_users_available": len(available[False]),
        "lent_population_users": lent, "max_tokens_per_user": config.max_tokens_per_user,
        "max_chunks_per_user": config.max_chunks_per_user, "max_users_per_side": config.max_users_per_side,
        "rmia_population_chunks": len(population_rows), "neighbourhood_samples": len(neighbourhood),
        "neighbours": sum(count for _, _, count in neighbourhood.values()),
    }


def _words_and_predictions(samples, results, reader) -> tuple[dict, dict]:
    """Per user, the keys of their audited words and of every word the model predicted in their chunks."""
    words_by_user: dict[str, set] = defaultdict(set)
    predicted_by_user: dict[str, set] = defaultdict(set)
    for sample, result in zip(samples, results):
        keys = (reader.key(sample.terms[w]) for w in sample.maskable_words)
        words_by_user[sample.user].update(key for key in keys if key is not None)
        for masking in result.predictions:
            for prediction in masking:
                predicted_by_user[sample.user].add(reader.predicted(prediction, sample.terms[prediction.word]))
    return words_by_user, predicted_by_user


def _sample_row(sample, result: SampleResult, reference: SampleResult | None, neighbourhood: tuple | None, pseudonym,
                config: AuditConfig) -> dict:
    own_loss, neighbour_loss, neighbours = neighbourhood or (None, None, 0)
    return {
        "sample": f"{pseudonym('doc', sample.doc_id)}-{sample.chunk}",
        "user": pseudonym("user", sample.user),
        "member": int(sample.member),
        "masked_tokens": int(result.tokens.sum()),
        "loss": result.loss,
        "energy": result.energy,
        "reference_energy": reference.energy if reference is not None else None,
        "reference_loss": reference.loss if reference is not None else None,
        "rmia_log_ratio": log_ratio(result.loss, reference.loss, config.rmia_offline_a) if reference is not None else None,
        "neighbourhood_loss": own_loss,
        "neighbour_loss": neighbour_loss,
        "neighbours": neighbours,
        "loss_score": -result.loss,
        "likelihood_ratio_score": reference.energy - result.energy if reference is not None else None,
        "neighbourhood_score": neighbour_loss - own_loss if neighbourhood else None,
    }


def _population_row(sample, result: SampleResult, reference: SampleResult, pseudonym, config: AuditConfig) -> dict:
    """A population chunk z of the reference-calibrated attack: never scored, only compared with."""
    return {"sample": f"{pseudonym('doc', sample.doc_id)}-{sample.chunk}", "user": pseudonym("user", sample.user),
            "loss": result.loss, "reference_loss": reference.loss,
            "rmia_log_ratio": log_ratio(result.loss, reference.loss, config.rmia_offline_a)}


def _add_rmia_scores(sample_rows: list[dict], population_rows: list[dict], config: AuditConfig) -> None:
    """Each sample's rmia_score against the population chunks of other users (None without them)."""
    scores = rmia_scores([row["rmia_log_ratio"] for row in sample_rows], [row["user"] for row in sample_rows],
                         [row["rmia_log_ratio"] for row in population_rows], [row["user"] for row in population_rows],
                         config.rmia_gamma)
    for row, score in zip(sample_rows, scores):
        row["rmia_score"] = score


def _utility(samples, results, config: AuditConfig) -> dict:
    """Masked whole-word accuracy on the non-members' chunks (the utility), and on the members' for the gap, each with
    its bootstrap interval over users."""
    figures = {}
    for name, member in (("masked_word_accuracy", False), ("member_masked_word_accuracy", True)):
        pairs = [(s.user, p) for s, r in zip(samples, results) if s.member == member for masking in r.predictions
                 for p in masking]
        words = [p for _, p in pairs]
        if words:
            result = load_metric("masked_word_accuracy").compute(predictions=[p.predicted for p in words],
                                                                 references=[p.original for p in words])
            figures[name] = result["masked_word_accuracy"]
            figures[name.replace("accuracy", "count")] = result["words"]
            figures[f"{name}_ci"] = _accuracy_interval(pairs, config)
        else:
            figures[name] = None
    return figures


def _accuracy_interval(pairs: list, config: AuditConfig) -> list[float] | None:
    """Percentile-bootstrap interval of a masked-word accuracy over the users behind its words (`pairs` of user and
    prediction): a user's words are alike, so users, not words, are resampled, as for the attacks' intervals. None
    without resamples."""
    if not config.bootstrap_resamples:
        return None
    hits, totals = defaultdict(int), defaultdict(int)
    for user, prediction in pairs:
        hits[user] += prediction.correct
        totals[user] += 1
    users = list(totals)
    hit, total = np.array([hits[u] for u in users], float), np.array([totals[u] for u in users], float)
    draws = np.random.default_rng(config.seed).multinomial(len(users), np.full(len(users), 1 / len(users)),
                                                           size=config.bootstrap_resamples)
    tail = (1 - config.confidence) / 2
    low, high = np.quantile(draws @ hit / (draws @ total), [tail, 1 - tail])
    return [float(low), float(high)]


def _reference_pass(reference, samples, plans, out_dir: Path, passes: dict) -> list[SampleResult]:
    """The reference model's energies on the audit's maskings, read from the cache when this reference
    already scored these very maskings (every epoch audits the same ones)."""
    digest = hashlib.blake2b(digest_size=16)
    for parameter in reference.state_dict().values():
        digest.update(parameter.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes() if parameter.numel() else b"")
    for sample, plan in zip(samples, plans):
        digest.update(sample.input_ids.tobytes())
        for words in plan:
            digest.update(words.tobytes() + b"|")
    path = reference_cache(out_dir, digest.hexdigest())
    if path.exists():
        cached = json.loads(path.read_text())
        return [SampleResult(np.array(nll), np.array(tokens)) for nll, tokens in zip(cached["nll"], cached["tokens"])]
    results = score_samples(reference, samples, plans, with_predictions=False, description="audit reference", **passes)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps({"nll": [r.nll.tolist() for r in results], "tokens": [r.tokens.tolist() for r in results]}))
    return results


NO_POPULATION = ("no population chunk: the audit scores every chunk of the audited non-members (e.g. --max-tokens 0), and "
                 "RMIA compares only with chunks that it does not score and no model trained on; cap "
                 "audit.max_tokens_per_user or audit.max_chunks_per_user to leave some")


def attacks_not_run(attacks: dict, config: AuditConfig, with_reference: bool, population: int, neighbours: int) -> dict:
    """Why each attack that has no figures was not run, by attack: written into epoch-N.json, printed, and shown by
    the report and the card, so that a missing attack is never silent."""
    reasons = {
        "likelihood_ratio": None if with_reference else "no reference model (audit.reference none)",
        "rmia": ("no reference model (audit.reference none)" if not with_reference
                 else "audit.rmia_population_chunks is 0" if not config.rmia_population_chunks
                 else NO_POPULATION if not population else None),
        "neighbourhood": (None if neighbours else "audit.neighbours is 0" if config.neighbours == 0
                          else "audit.neighbours is null and the audit has a reference model"),
        BLIND: "fewer than two audited users on a side (the blind baseline is cross-validated by user)",
    }
    return {attack: reason for attack, reason in reasons.items()
            if reason is not None and all(result is None for result in attacks[attack].values())}
