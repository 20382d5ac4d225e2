"""`ppmlm push` on a tiny audited run: the export reloads, its card carries the audit and its digests, nothing
sensitive or blacklisted leaves, the policy refuses (no audit, figures over thresholds, a skipped attack),
an audit that does not speak for the weights is refused (edited, stale, other split or blacklist, from
before digests), links are never followed, --force says so in the card, a dry run writes nothing, and the
upload path makes the expected calls (never the network)."""
import json
import re
import shutil
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from conftest import TINY_MODEL, small_corpus
from huggingface_hub import ModelCard
from safetensors.torch import load_file

from ppmlm.audit.attacks import tpr_text, with_interval
from ppmlm.audit.checkpoint import settings_digest
from ppmlm.audit.outputs import SIGNATURE, audit_secret, signature
from ppmlm.audit.policy import Check, outcome
from ppmlm.cli import main
from ppmlm.corpus.split import UserSplit
from ppmlm.errors import PPMLMError
from ppmlm.identifiers.blacklist import Blacklist
from ppmlm.models import weights_digests
from ppmlm.sharing import PolicyError, SharingPolicy, UnverifiedAuditError, build_model_card, push_run

LENIENT = SharingPolicy(min_privacy_score=0.0, max_tpr_at_1pct_fpr={  # every checked attack at 1.0; the unchecked stay so
    attack: None if limit is None else 1.0 for attack, limit in SharingPolicy().max_tpr_at_1pct_fpr.items()})
MODEL_FILES = {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}


@pytest.fixture(scope="session")
def audited_run(tmp_path_factory):
    """A tiny ppmlm run of one epoch, audited by the training loop against a separately initialized reference
    (so that every attack has figures), and its training blacklist."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer, BertConfig

    from ppmlm.models import default_model_path
    from ppmlm.pipeline import compose_config, train

    tmp = tmp_path_factory.mktemp("push")
    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    torch.manual_seed(5)
    AutoModelForMaskedLM.from_config(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2,
                                                num_attention_heads=2, intermediate_size=64)).save_pretrained(tmp / "reference")
    tokenizer.save_pretrained(tmp / "reference")
    run = train(compose_config([
        TINY_MODEL, f"data.path={small_corpus()}", "train.max_length=64", "train.epochs=1", "blacklist.ner=none",
        "blacklist.spans_from=phi", f"blacklist.cache_dir={tmp / 'cache'}", f"audit.reference={tmp / 'reference'}",
        "audit.max_users_per_side=3", "audit.maskings=4", "++audit.progress=false", f"output_dir={tmp / 'run'}"]))
    [blacklist] = [p for p in (tmp / "cache").iterdir() if p.is_dir() and not p.name.startswith(".")]
    return SimpleNamespace(tmp=tmp, run=run, blacklist=Blacklist.load(blacklist))


def edited_copy(run: Path, target: Path, edit=None, sign: bool = True) -> Path:
    """A copy of the run whose epoch-1 audit is changed by `edit(figures)` and signed again with the run's
    secret, as another audit of the same weights would be (`sign=False`: a hand edit), or removed when `edit`
    is None."""
    shutil.copytree(run, target, symlinks=True)
    audit = target / "audit" / "epoch-1.json"
    if edit is None:
        audit.unlink()
    else:
        figures = json.loads(audit.read_text())
        edit(figures)
        if sign:
            figures[SIGNATURE] = signature(figures, audit_secret(target / "audit"))
        audit.write_text(json.dumps(figures))
    return target


def test_default_policy_is_the_one_in_recipes_config():
    from ppmlm.pipeline import compose_config

    assert SharingPolicy.from_config(compose_config([]).share) == SharingPolicy() == SharingPolicy.from_config(None)


def test_policy_checks_intervals_against_thresholds_and_refuses_missing_figures():
    """A check passes only when the figure's whole interval meets its threshold; an interval across the
    threshold is inconclusive, a level the audit could not resolve is unknown, a missing figure fails."""
    unresolved = {"0.01": {"needs_non_members": 100, "reason": "5 non-members"}}
    figures = {"privacy": {"score": 0.995, "score_ci": [0.992, 0.999], "direct": {"score": 0.98, "score_ci": [0.96, 0.985]},
                           "indirect": {"score": 1.0, "score_ci": [0.995, 1.0]}},
               "attacks": {"loss": {"sample": {"tpr_at_fpr": {"0.01": 0.05}, "tpr_at_fpr_ci": {"0.01": [0.0, 0.08]}},
                                    "user": {"tpr_at_fpr": {"0.01": 0.2}, "tpr_at_fpr_ci": {"0.01": [0.15, 0.3]}}},
                           "likelihood_ratio": {"sample": None, "user": None},
                           "identifier_count": {"user": {"tpr_at_fpr": {"0.01": None}, "unresolved": unresolved}},
                           "identifier_share": {"user": {"tpr_at_fpr": {"0.01": 0.05}, "tpr_at_fpr_ci": {"0.01": [0.0, 0.3]}}}}}
    checks = {c.figure: c for c in SharingPolicy().check(figures)}
    assert list(checks) == ["privacy score", "privacy score (direct)", "privacy score (indirect)",
                            "privacy score (independent identifiers)",
                            "loss TPR at 1% FPR (sample)", "loss TPR at 1% FPR (user)", "likelihood_ratio TPR at 1% FPR (sample)",
                            "likelihood_ratio TPR at 1% FPR (user)", "rmia TPR at 1% FPR (sample)", "rmia TPR at 1% FPR (user)",
                            "neighbourhood TPR at 1% FPR (sample)", "neighbourhood TPR at 1% FPR (user)",
                            "identifier_count TPR at 1% FPR (user)", "identifier_share TPR at 1% FPR (user)"]
    assert {name: c.status for name, c in checks.items() if not c.passed} == {
        "privacy score (direct)": "FAIL", "loss TPR at 1% FPR (user)": "FAIL",
        "likelihood_ratio TPR at 1% FPR (sample)": "not measured", "likelihood_ratio TPR at 1% FPR (user)": "not measured",
        "identifier_count TPR at 1% FPR (user)": "not resolved", "identifier_share TPR at 1% FPR (user)": "inconclusive"}
    assert checks["loss TPR at 1% FPR (user)"].describe() == ("loss TPR at 1% FPR (user) 0.2 > 0.1 "
                                                              "(interval 0.2000 [0.1500, 0.3000])")
    assert checks["privacy score (direct)"].describe().startswith("privacy score (direct) 0.98 < 0.99")
    assert checks["identifier_count TPR at 1% FPR (user)"].measured == "not resolved (needs ≥ 100 non-members)"
    assert checks["privacy score (independent identifiers)"].status == "not checked"  # by default
    independent = SharingPolicy(min_independent_privacy_score=0.9).check(figures)[3]
    assert independent.status == "not measured" and not independent.passed  # required, but the audit had no such set
    assert outcome(list(checks.values())) == "failed"
    assert Check("x", 0.05, 0.1, at_least=False).status == "inconclusive"  # no interval: its uncertainty is unknown

    assert checks["rmia TPR at 1% FPR (user)"].status == "not checked"  # the attacks added later: only when named,
    assert SharingPolicy().with_command_line(None, ["0.3"]).max_tpr_at_1pct_fpr["rmia"] is None  # not by a bare --max-tpr
    relaxed = SharingPolicy().with_command_line("0.95", ["0.3", "likelihood_ratio=none", "identifier_count=1"])
    assert relaxed.min_privacy_score == 0.95 and relaxed.max_tpr_at_1pct_fpr["loss"] == 0.3
    statuses = {c.figure: c.status for c in relaxed.check(figures)}
    assert statuses["likelihood_ratio TPR at 1% FPR (user)"] == "not checked" and all(c.passed for c in relaxed.check(figures))
    assert statuses["identifier_count TPR at 1% FPR (user)"] == "pass"  # unknown, but any TPR meets <= 1
    assert outcome(SharingPolicy().with_command_line("0.95", ["0.3", "likelihood_ratio=none"]).check(figures)) == "inconclusive"
    for bad in (lambda: SharingPolicy().with_command_line(None, ["membership=0.1"]),
                lambda: SharingPolicy().with_command_line("1.5"), lambda: SharingPolicy().with_command_line(None, ["lots"]),
                lambda: SharingPolicy.from_config({"max_tpr_at_1pct_fpr": {"gradient": 0.1}})):
        with pytest.raises(PPMLMError):
            bad()


def test_local_export_reloads_and_its_card_carries_the_audit(audited_run, tmp_path):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    out = tmp_path / "export"
    plan = push_run(audited_run.run, "org/tiny-ppmlm", local_dir=out, policy=LENIENT)
    assert plan.verdict == "passed" and plan.destination == str(out)
    assert {p.name for p in out.iterdir()} == MODEL_FILES | {"README.md"}  # the allow-list: nothing else of the run
    model, tokenizer = AutoModelForMaskedLM.from_pretrained(out), AutoTokenizer.from_pretrained(out)
    trained = load_file(audited_run.run / "checkpoints" / "epoch-1" / "model.safetensors")
    assert all(torch.equal(value, model.state_dict()[name]) for name, value in trained.items() if name in model.state_dict())
    assert len(tokenizer) == model.config.vocab_size

    card = ModelCard.load(out / "README.md")
    figures = json.loads((audited_run.run / "audit" / "epoch-1.json").read_text())
    assert card.data.library_name == "transformers" and card.data.pipeline_tag == "fill-mask"
    assert {"ppmlm", "privacy"} <= set(card.data.tags) and "dp" not in card.data.tags
    assert card.data.base_model is None  # built from a config: no base model to link
    results = {r.metric_name: r.metric_value for r in card.data.eval_results}
    assert results["privacy score (identifiers never predicted)"] == round(figures["privacy"]["score"], 4)
    text = card.text
    assert "k = 2" in text and "n = 1" in text and "epoch 1 of 1" in text and "**passed**" in text
    privacy = figures["privacy"]
    assert f"{with_interval(privacy['score'], privacy['score_ci'], 4)} ({privacy['leaked']} of {privacy['identifiers']}" in text
    for attack, name in (("loss", "loss"), ("likelihood_ratio", "likelihood ratio"), ("identifier_count", "identifier count")):
        for level, result in figures["attacks"][attack].items():
            tprs = " | ".join(tpr_text(result, fpr) for fpr in ("0.001", "0.01", "0.1"))
            assert f"| {name} | {level} | {with_interval(result['auc'], result['auc_ci'])} | {tprs} |" in text
            assert result["tpr_at_fpr"]["0.001"] is None and "not resolved (needs ≥ 1000 non-members)" in tprs
    assert f"{figures['audited']['member_users']} member users" in text and "Sharing policy overridden" not in text
    independent = figures["privacy_independent"]  # the synthetic corpus's gold spans, audited by default
    assert (f"| independent identifiers the training blacklist missed / of those predicted by the model | "
            f"{independent['missed_by_blacklist']['identifiers']} / {independent['missed_by_blacklist']['leaked']} |") in text
    [(name, digest)] = weights_digests(out).items()  # the card names the exported weights by their sha256
    assert f"| weights file `{name}` | `{digest}` |" in text and digest == figures["measured"]["weights"][name]
    assert f"`{audited_run.blacklist.digest()}`" in text and "Verified by `ppmlm push`" in text
    assert f"`{UserSplit.load(audited_run.run / 'split.json').digest()}`" in text and "Not verified" not in text


def words_without_the_corpus(shared, checks, forced: bool) -> set[str]:
    """Words of the card of the same run with every audit figure blanked (numbers 0, strings empty): what the
    card says whatever the corpus, i.e. the words of its template, of the run's settings and of the reasons an
    attack did not run (sentences of the audit's own)."""
    def blank(value):
        if isinstance(value, dict):
            return {key: item if key == "attacks_not_run" else blank(item) for key, item in value.items()}
        if isinstance(value, list):
            return [blank(item) for item in value]
        return "" if isinstance(value, str) else value if value is None or isinstance(value, bool) else 0

    card = build_model_card(replace(shared, figures=blank(shared.figures), training_users=0), checks, "org/tiny-ppmlm", forced)
    return {word.lower() for word in re.findall(r"\w+", str(card))}


def test_no_blacklisted_term_in_any_exported_text_file(audited_run, tmp_path):
    from transformers import AutoTokenizer

    from ppmlm.models import default_model_path

    out = tmp_path / "export"
    plan = push_run(audited_run.run, "org/tiny-ppmlm", local_dir=out, force=True)
    # The card prints counts and rates, so a number in it cannot be told from a number in a note: numeric
    # terms are left out. Words the card holds whatever the corpus (its template: "each", "white" are
    # indirect identifiers of the synthetic corpus by chance) or the untrained base model's configuration
    # holds are not leaks either.
    allowed = words_without_the_corpus(plan.shared, plan.checks, plan.forced)
    AutoTokenizer.from_pretrained(default_model_path()).save_pretrained(tmp_path / "base")  # as transformers writes it
    for path in (default_model_path() / "config.json", tmp_path / "base" / "tokenizer_config.json"):
        allowed |= {word.lower() for word in re.findall(r"\w+", path.read_text())}
    terms = [term for term in audited_run.blacklist.terms if re.search(r"[^\W\d_]", term)]
    assert len(terms) > 50
    # tokenizer.json (and vocab.txt, merges.txt for other tokenizers) lists the whole vocabulary, so it holds
    # most words of any English corpus: it is the base tokenizer's, unchanged by training, and not searched.
    searched = [p for p in out.iterdir() if p.suffix in (".md", ".json") and p.name != "tokenizer.json"]
    assert {p.name for p in searched} == {"README.md", "config.json", "tokenizer_config.json"}
    for path in searched:
        text = path.read_text()
        found = [t for t in terms if re.search(rf"(?<!\w){re.escape(t)}(?!\w)", text, re.IGNORECASE)
                 and not set(re.findall(r"\w+", t.lower())) <= allowed]
        assert not found, f"{path.name} holds {len(found)} blacklisted terms"


def test_refuses_a_checkpoint_without_audit(audited_run, tmp_path, capsys):
    run = edited_copy(audited_run.run, tmp_path / "run")
    with pytest.raises(PPMLMError, match="epoch 1 has no audit"):
        push_run(run, "org/tiny-ppmlm", local_dir=tmp_path / "out", force=True)
    assert main(["push", str(run), "--repo-id", "org/tiny-ppmlm", "--local-dir", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "has no audit" in error and not (tmp_path / "out").exists()


def test_a_failing_audit_blocks_the_push_and_force_says_so_in_the_card(audited_run, tmp_path, capsys):
    def members_found(figures):  # as a larger audit (one resolving FPR 1%) could find
        loss = figures["attacks"]["loss"]["user"]
        loss["tpr_at_fpr"]["0.01"], loss["tpr_at_fpr_ci"]["0.01"] = 0.5, [0.3, 0.7]
        loss["unresolved"].pop("0.01")
        figures["attacks"]["likelihood_ratio"] = {"sample": None, "user": None}  # as when no reference was given

    run = edited_copy(audited_run.run, tmp_path / "run", members_found)
    out = tmp_path / "out"
    assert main(["push", str(run), "--repo-id", "org/tiny-ppmlm", "--local-dir", str(out), "--min-privacy-score", "0"]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "loss TPR at 1% FPR (user) 0.5 > 0.1" in error
    assert "likelihood_ratio TPR at 1% FPR (sample) not measured" in error and not out.exists()
    with pytest.raises(PolicyError, match=r"loss TPR at 1% FPR \(user\) 0.5 > 0.2"):
        push_run(run, "org/tiny-ppmlm", local_dir=out, policy=SharingPolicy().with_command_line("0", ["0.2"]))

    assert main(["push", str(run), "--repo-id", "org/tiny-ppmlm", "--local-dir", str(out), "--min-privacy-score", "0",
                 "--max-tpr", "likelihood_ratio=none", "--force"]) == 0
    assert "shared anyway with --force" in capsys.readouterr().out
    card = ModelCard.load(out / "README.md").text
    assert "Sharing policy overridden" in card and "loss TPR at 1% FPR (user) 0.5 > 0.1" in card
    assert "| likelihood ratio | sample | not measured |" in card
    assert "| likelihood_ratio TPR at 1% FPR (user) | not measured | not checked |" in card


def test_dry_run_lists_the_export_and_writes_nothing(audited_run, tmp_path, monkeypatch, capsys):
    from huggingface_hub import HfApi

    def no_network(*args, **kwargs):
        raise AssertionError("a dry run must not contact the Hub")

    monkeypatch.setattr(HfApi, "create_repo", no_network)
    monkeypatch.setattr(HfApi, "upload_folder", no_network)
    before = sorted((p, p.stat().st_mtime_ns) for p in audited_run.run.rglob("*"))
    monkeypatch.chdir(tmp_path)
    assert main(["push", str(audited_run.run), "--repo-id", "org/tiny-ppmlm", "--dry-run", "--min-privacy-score", "0",
                 "--max-tpr", "1"]) == 0
    printed = capsys.readouterr().out
    assert "dry run" in printed and "sharing policy: passed" in printed
    assert all(re.search(rf"{re.escape(name)} +[\d,]+ bytes", printed) for name in MODEL_FILES | {"README.md"})
    assert sorted((p, p.stat().st_mtime_ns) for p in audited_run.run.rglob("*")) == before and not list(tmp_path.iterdir())


def test_upload_creates_the_repository_and_uploads_only_the_export(audited_run, monkeypatch):
    import huggingface_hub
    from huggingface_hub import HfApi

    calls = []

    def create_repo(self, repo_id, **kwargs):
        calls.append(("create_repo", repo_id, kwargs))
        return f"https://huggingface.co/{repo_id}"

    def upload_folder(self, *, repo_id, folder_path, **kwargs):
        calls.append(("upload_folder", repo_id, {p.name for p in Path(folder_path).iterdir()}, kwargs))

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # the tests' environment sets it
    monkeypatch.setattr(HfApi, "create_repo", create_repo)
    monkeypatch.setattr(HfApi, "upload_folder", upload_folder)
    plan = push_run(audited_run.run, "org/tiny-ppmlm", private=True, policy=LENIENT)
    assert calls[0] == ("create_repo", "org/tiny-ppmlm", {"private": True, "exist_ok": True})
    assert calls[1][:3] == ("upload_folder", "org/tiny-ppmlm", MODEL_FILES | {"README.md"})
    assert "audit: passed" in calls[1][3]["commit_message"] and len(calls) == 2
    assert plan.destination == "https://huggingface.co/org/tiny-ppmlm"
    with pytest.raises(PPMLMError, match="--repo-id"):
        push_run(audited_run.run, "not a repo id!", policy=LENIENT)


def dp_copy(audited_run, target: Path, epsilon: dict) -> tuple[Path, dict]:
    """A copy of the run as a chunk-level DP run: privacy.json beside the weights as the DP trainer writes it, and
    the audit signed over its ε and settings as an audit of that checkpoint records them."""
    from omegaconf import OmegaConf

    from ppmlm.training.dp.accounting import GROUP_BOUND, group_bound

    privacy = {"delta": 1e-5, "noise_multiplier": 0.61, "max_grad_norm": 10.0, "sample_rate": 0.02, "steps": 44, "unit": "chunk",
               "chunks_per_user": {"users": 6, "max": 90, "mean": 58.2},
               "group": {"chunks": 90, "bound": GROUP_BOUND,
                         **{name: group_bound(eps, 1e-5, 90) for name, eps in epsilon.items()}}}
    config = OmegaConf.load(audited_run.run / "config.yaml")
    config.train.dp.enabled = True

    def audited_as_dp(figures):
        figures.update(dp={**epsilon, "delta": 1e-5, "unit": "chunk"}, dp_settings=privacy)
        figures["measured"]["settings"] = settings_digest(OmegaConf.to_container(config))

    run = edited_copy(audited_run.run, target, audited_as_dp)
    OmegaConf.save(config, run / "config.yaml")
    (run / "checkpoints" / "epoch-1" / "privacy.json").write_text(json.dumps({"epsilon": epsilon, "privacy": privacy}))
    return run, privacy


def test_a_dp_run_card_states_epsilon_and_privacy_json_stays(audited_run, tmp_path):
    """DP accounting as the DP trainer writes it beside the weights: in the card, never in the export."""
    run, _ = dp_copy(audited_run, tmp_path / "run", {"rdp": 7.9, "prv": 6.2})
    plan = push_run(run, "org/tiny-ppmlm-dp", local_dir=tmp_path / "out", policy=LENIENT)
    assert {name for name, _ in plan.files()} == MODEL_FILES | {"README.md"}
    card = ModelCard.load(tmp_path / "out" / "README.md")
    assert "dp" in card.data.tags and "`ppmlm + DP-SGD`" in card.text
    assert "ε = 7.9 (RDP), 6.2 (PRV) at δ = 1e-05" in card.text and "σ = 0.61" in card.text
    assert "at most 90 chunks" in card.text and "δ ≥ 1 (vacuous)" in card.text  # 90 chunks at ε 7.9: no per-user bound


@pytest.mark.parametrize("forged", ["epsilon", "settings"])
def test_a_privacy_json_edited_after_the_audit_is_refused_and_the_card_states_the_signed_epsilon(audited_run, tmp_path,
                                                                                                 capsys, forged):
    """ε 7.99 made 0.01 (or σ made larger) in privacy.json after the audit: the card states only what the audit signed,
    and push refuses a privacy.json that says otherwise, with one line."""
    run, privacy = dp_copy(audited_run, tmp_path / "run", {"rdp": 7.99})
    path = run / "checkpoints" / "epoch-1" / "privacy.json"
    spent = json.loads(path.read_text())
    if forged == "epsilon":
        spent["epsilon"]["rdp"] = 0.01
    else:
        spent["privacy"]["noise_multiplier"] = 5.0
    path.write_text(json.dumps(spent))
    error = refusal(run, tmp_path, capsys, "--min-privacy-score", "0", "--max-tpr", "1")
    named = "(ε, δ and its unit)" if forged == "epsilon" else "(the DP-SGD settings)"
    assert f"privacy.json {named} is not what the audit recorded" in error and "ppmlm audit --model" in error

    plan = push_run(run, "org/tiny-ppmlm-dp", local_dir=tmp_path / "out", policy=LENIENT, force=True)
    assert plan.verdict == "unverified; shared anyway with --force"
    card = ModelCard.load(tmp_path / "out" / "README.md").text
    assert "ε = 7.99 (RDP) at δ = 1e-05" in card and "0.01 (RDP)" not in card
    assert "σ = 0.61" in card and "σ = 5" not in card and "**Not verified**" in card


def refusal(run: Path, tmp_path: Path, capsys, *options) -> str:
    """The one line `ppmlm push` prints when it refuses `run`, having written nothing."""
    out = tmp_path / "refused"
    capsys.readouterr()
    assert main(["push", str(run), "--repo-id", "org/tiny-ppmlm", "--local-dir", str(out), *options]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and not out.exists()
    return error


def test_an_audit_edited_by_hand_is_refused_and_force_marks_the_card_unverified(audited_run, tmp_path, capsys):
    def passes(figures):
        figures["attacks"]["loss"]["user"]["tpr_at_fpr"]["0.01"] = 0.0

    run = edited_copy(audited_run.run, tmp_path / "run", passes, sign=False)
    error = refusal(run, tmp_path, capsys, "--min-privacy-score", "0", "--max-tpr", "1")
    assert "signature does not match" in error and "ppmlm audit --model" in error
    with pytest.raises(UnverifiedAuditError):
        push_run(run, "org/tiny-ppmlm", dry_run=True, policy=LENIENT)

    plan = push_run(run, "org/tiny-ppmlm", local_dir=tmp_path / "out", policy=LENIENT, force=True)
    assert plan.verdict == "unverified; shared anyway with --force"
    card = ModelCard.load(tmp_path / "out" / "README.md").text
    assert card.count("signature does not match") == 2 and "Audit not verified" in card and "**passed**" not in card
    assert "**Not verified**" in card and "Verified by" not in card


def test_weights_changed_after_their_audit_are_refused(audited_run, tmp_path, capsys):
    from safetensors.torch import save_file

    run = edited_copy(audited_run.run, tmp_path / "run", lambda figures: None)
    weights = run / "checkpoints" / "epoch-1" / "model.safetensors"
    tensors = load_file(weights)
    name = next(iter(tensors))
    tensors[name] = tensors[name] + 1e-3  # retrained, or swapped for other weights, under the old audit
    save_file(tensors, weights, metadata={"format": "pt"})
    error = refusal(run, tmp_path, capsys, "--min-privacy-score", "0", "--max-tpr", "1")
    assert "weights file model.safetensors is not the one audited" in error


def test_an_audit_of_another_split_or_blacklist_is_refused(audited_run, tmp_path, capsys):
    from omegaconf import OmegaConf

    run = edited_copy(audited_run.run, tmp_path / "run", lambda figures: None)
    split = UserSplit.load(run / "split.json")
    split.members, split.population = split.members[1:], split.population + split.members[:1]
    split.save(run / "split.json")
    other = audited_run.blacklist.with_k(3).save(tmp_path / "other-blacklist")
    config = OmegaConf.load(run / "config.yaml")
    config.blacklist.path = str(other)
    OmegaConf.save(config, run / "config.yaml")
    error = refusal(run, tmp_path, capsys, "--min-privacy-score", "0", "--max-tpr", "1")
    assert "split.json is not the user split the audit used" in error
    assert "the run's blacklist is not the one the audit used" in error

    config.blacklist.path = str(tmp_path / "gone")
    OmegaConf.save(config, run / "config.yaml")
    assert "the run's blacklist (blacklist.path) is not found" in refusal(
        run, tmp_path, capsys, "--min-privacy-score", "0", "--max-tpr", "1")


def test_training_settings_edited_after_the_audit_are_refused(audited_run, tmp_path, capsys):
    """The card states the recipe and settings of config.yaml: one that no longer holds what the audited checkpoint was
    trained with (an mlm run made to read as ppmlm, k changed) is refused; what a resume may change (the sharing
    policy, where the run logs) is not a difference."""
    from omegaconf import OmegaConf

    run = edited_copy(audited_run.run, tmp_path / "run", lambda figures: None)
    config = OmegaConf.load(run / "config.yaml")
    config.share.license, config.train.log_every = "mit", 7
    OmegaConf.save(config, run / "config.yaml")
    assert push_run(run, "org/tiny-ppmlm", dry_run=True, policy=LENIENT).shared.unverified == ()
    config.masking.variant, config.blacklist.k = "mlm", 5
    OmegaConf.save(config, run / "config.yaml")
    error = refusal(run, tmp_path, capsys, "--min-privacy-score", "0", "--max-tpr", "1")
    assert "config.yaml does not hold the training settings the audited checkpoint was trained with" in error

    def older(figures):
        del figures["measured"]["settings"]

    older_run = edited_copy(audited_run.run, tmp_path / "older", older)
    assert "the audit predates the digest of the run's training settings" in refusal(
        older_run, tmp_path, capsys, "--min-privacy-score", "0", "--max-tpr", "1")


def test_an_audit_from_before_digests_is_refused(audited_run, tmp_path, capsys):
    def older(figures):
        del figures["measured"], figures[SIGNATURE]

    run = edited_copy(audited_run.run, tmp_path / "run", older, sign=False)
    error = refusal(run, tmp_path, capsys, "--min-privacy-score", "0", "--max-tpr", "1")
    assert "the audit predates signed digests" in error
    assert f"ppmlm audit --model {run / 'checkpoints' / 'epoch-1'} --out {run / 'audit'}" in error


def test_push_finds_a_relative_blacklist_cache_from_any_folder(audited_run, tmp_path, monkeypatch, capsys):
    """A run trained from /proj with the defaults' relative paths (output_dir runs/..., blacklist.cache_dir .cache/...)
    is pushed from another folder: the cache is read where training read it, found from output_dir. Where that cannot
    be told, the refusal says what to do."""
    from omegaconf import OmegaConf

    project = tmp_path / "proj"
    run = edited_copy(audited_run.run, project / "runs" / "tiny", lambda figures: None)
    shutil.copytree(audited_run.tmp / "cache", project / ".cache" / "blacklists")
    config = OmegaConf.load(run / "config.yaml")
    config.output_dir, config.blacklist.cache_dir = "runs/tiny", ".cache/blacklists"
    OmegaConf.save(config, run / "config.yaml")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    capsys.readouterr()
    assert main(["push", str(run), "--repo-id", "org/tiny-ppmlm", "--local-dir", "out", "--min-privacy-score", "0",
                 "--max-tpr", "1"]) == 0, capsys.readouterr().err
    assert "Verified by `ppmlm push`" in (tmp_path / "elsewhere" / "out" / "README.md").read_text()

    config.output_dir = str(tmp_path / "somewhere-else")  # the folder training ran in cannot be told from it
    OmegaConf.save(config, run / "config.yaml")
    error = refusal(run, tmp_path, capsys, "--min-privacy-score", "0", "--max-tpr", "1")
    assert "the run's blacklist (its entry under blacklist.cache_dir) is not found" in error
    assert "run push from the folder training ran in, or make blacklist.cache_dir in the run's config.yaml an absolute" in error
    monkeypatch.chdir(project)  # from the folder training ran in
    assert main(["push", str(run), "--repo-id", "org/tiny-ppmlm", "--local-dir", str(tmp_path / "out2"),
                 "--min-privacy-score", "0", "--max-tpr", "1"]) == 0


@pytest.mark.parametrize("name", ["vocab.txt", "tokenizer.json"])
def test_an_exported_name_that_is_a_link_is_refused_not_followed(audited_run, tmp_path, capsys, name):
    run = edited_copy(audited_run.run, tmp_path / "run", lambda figures: None)
    link = run / "checkpoints" / "epoch-1" / name
    link.unlink(missing_ok=True)
    link.symlink_to(audited_run.tmp / "cache" / next(p.name for p in (audited_run.tmp / "cache").iterdir()
                                                     if not p.name.startswith(".")) / "terms.jsonl")
    error = refusal(run, tmp_path, capsys, "--min-privacy-score", "0", "--max-tpr", "1", "--force")
    assert f"{name} is a symbolic link" in error and "regular files only" in error


def test_a_local_dir_that_is_a_link_is_one_line(audited_run, tmp_path, capsys):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    capsys.readouterr()
    assert main(["push", str(audited_run.run), "--repo-id", "org/tiny-ppmlm", "--local-dir", str(tmp_path / "link"),
                 "--min-privacy-score", "0", "--max-tpr", "1"]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "--local-dir" in error and "is a symbolic link" in error
    assert not list((tmp_path / "real").iterdir()) and (tmp_path / "link").is_symlink()
