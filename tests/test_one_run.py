"""Empirical ε from one training run (Steinke, Nasr & Jagielski 2023): the bound, the plant, DP and plain runs on tiny
models, and the run's audit, report, policy and card (docs/audit.md, One-run empirical ε)."""
from __future__ import annotations

import json
import math
import re
from types import SimpleNamespace

import datasets
import pytest
import torch
from accelerate import Accelerator
from conftest import TINY_MODEL, memorize, small_corpus, word_tokenizer
from huggingface_hub import ModelCard
from transformers import AutoModelForMaskedLM, BertConfig

from ppmlm.audit.console import epoch_line
from ppmlm.audit.one_run import bound_of_scores, epsilon_lower_bound, guesses, one_run_figures, p_value
from ppmlm.audit.outputs import audit_secret, signature
from ppmlm.audit.policy import SharingPolicy
from ppmlm.config import RunConfig
from ppmlm.corpus.canaries import (
    CANARIES_FILE,
    ONE_RUN_NOUNS,
    ONE_RUN_PLACES,
    ONE_RUN_PREFIX,
    CanarySettings,
    OneRunCanaries,
    load_canaries,
    plan_one_run,
    plant_one_run,
    run_canaries,
)
from ppmlm.corpus.loading import load_corpus
from ppmlm.errors import ConfigError, PPMLMError
from ppmlm.features import FEATURE_COLUMNS, build_features
from ppmlm.masking.collator import PrivacyMaskingCollator
from ppmlm.pipeline import compose_config, train
from ppmlm.training.dp.trainer import PrivateTrainer

SEEDS = (0, 1, 2)
NO_DP = SimpleNamespace(enabled=False, unit="chunk", delta=1e-5)


def pseudonym(kind, value):
    return f"{kind}:{value}"


# --- the bound ------------------------------------------------------------------------------------------------------

def test_the_bound_reproduces_the_papers_figures():
    """Appendix D's worked examples (m = 100 or 1,000 canaries, 100 guesses, 75 right) and section 7's white-box
    figure (m = 100,000, 1,510 guesses, 1,439 right, δ = 1e-5: ε ≥ 2.675), to the digits the paper prints."""
    assert p_value(100, 100, 75, math.log(3), 0) == pytest.approx(0.553, abs=5e-4)
    assert epsilon_lower_bound(100, 100, 75, 0, 0.05) == pytest.approx(0.702, abs=5e-4)
    assert epsilon_lower_bound(100, 100, 75, 1e-4, 0.05) == pytest.approx(0.699, abs=5e-4)
    assert epsilon_lower_bound(1000, 100, 75, 1e-4, 0.05) == pytest.approx(0.673, abs=5e-4)
    assert epsilon_lower_bound(100_000, 1510, 1439, 1e-5, 0.05) == pytest.approx(2.675, abs=1e-3)  # printed truncated


def test_the_bound_at_its_extremes():
    """Every guess right and δ = 0: P[W = r] = q^r, so ε = -ln(β^(-1/r) - 1) exactly; half right refutes nothing; the
    most an audit can show grows with the guesses; a slack of δ only lowers the bound."""
    for r in (8, 16, 50):
        assert epsilon_lower_bound(r, r, r, 0, 0.05) == pytest.approx(-math.log(0.05 ** (-1 / r) - 1), abs=1e-8)
        assert epsilon_lower_bound(2 * r, r, r // 2, 1e-5, 0.05) == 0.0
    ceilings = [epsilon_lower_bound(m, m // 2, m // 2, 1e-5, 0.05) for m in (16, 32, 64, 128)]
    assert ceilings == sorted(ceilings) and ceilings[2] == pytest.approx(2.3195, abs=1e-4)
    assert epsilon_lower_bound(64, 32, 30, 1e-3, 0.05) < epsilon_lower_bound(64, 32, 30, 0, 0.05)
    assert p_value(64, 32, 32, 0.0, 0) == pytest.approx(0.5 ** 32)
    with pytest.raises(ValueError):
        p_value(10, 4, 5, 1.0, 0)


def test_guesses_take_the_highest_and_lowest_scores_and_pay_for_each_choice():
    scores = [5.0, 1.0, 4.0, 0.0, 3.0, 2.0]
    assert guesses(scores, 2, 1) == ["in", "abstain", "in", "out", "abstain", "abstain"]
    included = [True, False, True, False, True, False]  # the scores rank every member first
    one = bound_of_scores(scores, included, (1.0,), 0, 0.95)
    assert (one["k_plus"], one["k_minus"], one["correct"]) == (3, 3, 6)
    assert one["epsilon"] == pytest.approx(epsilon_lower_bound(6, 6, 6, 0, 0.05)) == one["highest_possible"]
    both = bound_of_scores(scores, included, (0.5, 1.0), 0, 0.95)
    assert both["beta_per_choice"] == 0.025 and both["epsilon"] == pytest.approx(epsilon_lower_bound(6, 6, 6, 0, 0.025))
    assert [c["guesses"] for c in both["choices"]] == [3, 6] and both["epsilon"] < one["epsilon"]


# --- the plant ------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def patients():
    records = [{"doc_id": f"u{u}d{d}", "user_id": f"u{u}", "text": f"patient {u} was seen for review . stable ."}
               for u in range(4) for d in range(2)]
    return load_corpus(datasets.Dataset.from_list(records))


def test_one_run_canaries_are_users_of_their_own_half_of_them_trained_on(patients, tmp_path):
    settings = CanarySettings.parse({"enabled": True, "mode": "one_run", "count": 40, "digits": 3, "seed": 7})
    plant = plan_one_run(patients, ["u0", "u1"], settings, NO_DP)
    assert len(plant.canaries) == 40 and len({c.secret for c in plant.canaries}) == 40
    assert all(c.user.startswith(ONE_RUN_PREFIX) and len(c.documents) == 1 for c in plant.canaries)
    assert 10 <= sum(c.included for c in plant.canaries) <= 30 and plant.unit == "chunk" and plant.delta == 1e-5
    planted = plant_one_run(patients, plant)
    added = planted.filter(lambda user: user.startswith(ONE_RUN_PREFIX), input_columns="user_id")
    assert set(added["user_id"]) == plant.trained_users  # the canaries left out are never in the corpus
    assert sorted(added["text"]) == sorted(c.sentence for c in plant.canaries if c.included)
    section = {"enabled": "auto", "count": 40, "digits": 3, "seed": 7}
    corpus, recorded = run_canaries(tmp_path, patients, ["u0", "u1"], section, record=True,
                                    dp=SimpleNamespace(enabled=True, unit="user", delta=1e-6))
    assert isinstance(recorded, OneRunCanaries) and recorded.unit == "user" and recorded.delta == 1e-6  # auto: DP runs
    assert load_canaries(tmp_path / CANARIES_FILE) == recorded  # a resumed run and `ppmlm audit` read the same plant
    assert run_canaries(tmp_path / "plain", patients, ["u0"], section, record=True, dp=NO_DP) == (patients, [])
    assert plan_one_run(patients, ["u0"] * 3, CanarySettings(mode="one_run"), NO_DP).canaries[0].secret.isdigit()
    assert len(plan_one_run(patients, [f"u{i}" for i in range(200)], CanarySettings(mode="one_run"),
                            SimpleNamespace(enabled=True, unit="user", delta=1e-5)).canaries) == 40  # 20% of 200 users


@pytest.mark.parametrize("overrides, message", [
    (["recipe=dp", "audit.canaries.copies=2"], "audit.canaries.copies=2: under train.dp.unit=chunk"),
    (["recipe=dp", "train.max_length=16"], "train.max_length=16: one-run canaries"),
    (["audit.canaries.count=1"], "audit.canaries.count=1: expected auto or an integer from 2"),
    (["audit.canaries.mode=both"], "audit.canaries.mode='both'"),
    (["audit.canaries.guesses=[0]"], r"audit.canaries.guesses=\[0\]"),
    (["share.max_empirical_epsilon=-1"], "share.max_empirical_epsilon=-1: expected a number of at least 0, accountant"),
])
def test_settings_that_would_not_make_a_unit_of_privacy_are_refused(overrides, message):
    with pytest.raises(ConfigError, match=message):
        RunConfig.from_config(compose_config(overrides))
    assert RunConfig.from_config(compose_config(["recipe=dp-user", "audit.canaries.copies=3"]))  # a user of 3 notes


# --- tiny models ------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def words(tmp_path_factory):
    """Every word of the notes and of the canaries' contexts one token, digits as WordPiece writes them ("1", "##9",
    "##9"), so that every secret shares its tokens with the others."""
    texts = ["The code is patient was seen for review . stable .", *ONE_RUN_PLACES, *ONE_RUN_NOUNS]
    return word_tokenizer(tmp_path_factory.mktemp("words"), texts,
                          extra=[f"{prefix}{digit}" for prefix in ("", "##") for digit in range(10)])


def planted_features(patients, tokenizer, count: int, copies: int, seed: int, unit="chunk"):
    settings = CanarySettings(enabled=True, mode="one_run", count=count, copies=copies, digits=3, seed=seed)
    plant = plan_one_run(patients, ["u0", "u1"], settings, SimpleNamespace(enabled=unit != "none", unit=unit, delta=1e-5))
    trained = plant_one_run(patients, plant).filter(lambda user: user not in ("u2", "u3"), input_columns="user_id")
    return plant, build_features(trained, None, tokenizer, max_length=32)


def tiny_bert(tokenizer, seed: int):
    torch.manual_seed(seed)
    return AutoModelForMaskedLM.from_config(BertConfig(vocab_size=len(tokenizer), hidden_size=64, num_hidden_layers=2,
                                                       num_attention_heads=2, intermediate_size=128,
                                                       max_position_embeddings=34))


@pytest.mark.kernels
def test_a_plain_mlm_run_whose_canaries_are_repeated_shows_an_epsilon_above_1(patients, words):
    """48 canaries of 4 notes each, a tiny model memorizing its 100 chunks in 150 steps: most seeds get 22 to 24 of the
    24 guesses right (ε 1.15 to 2.02; 21 right is 0.88). Measured over seeds 0-5, the same on AVX2 and default kernels:
    1.15, 2.02, 1.50, 1.15, 0.88, 0.88 (at 400 steps 1.50, 2.02, 1.50, 0.88, 1.15, 0.88: no better), so the claim is
    "at least 3 of 5 seeds above 1" (4 measured), and the policy's maximum of 1 fails the best. Untrained, the canaries
    refute nothing."""
    bounds, best = [], None
    for seed in range(5):
        plant, features = planted_features(patients, words, 48, 4, seed, unit="none")
        model = memorize(tiny_bert(words, seed), features.select_columns(list(FEATURE_COLUMNS)).to_list(), words, 150,
                         seed, seed + 1)
        figures, rows = one_run_figures(model, words, plant, None, 0.95, pseudonym)
        bounds.append(figures["epsilon"])
        best = figures if best is None or figures["epsilon"] > best["epsilon"] else best
        assert figures["unit"] == "user" and figures["accountant"] is None and len(rows) == 48
        assert sum(row["guess"] != "abstain" for row in rows) == figures["guesses"] == 24
        assert not {c.secret for c in plant.canaries} & {str(v) for row in rows for v in row.values()}
    assert sum(bound > 1 for bound in bounds) >= 3, bounds
    untrained, _ = one_run_figures(tiny_bert(words, 9), words, plant, None, 0.95, pseudonym)
    assert untrained["epsilon"] < 1, untrained
    [check] = SharingPolicy(max_empirical_epsilon=1.0).check({"empirical_epsilon": best})[-1:]
    assert check.figure == "empirical ε (one run, lower bound)" and check.status == "FAIL"


@pytest.mark.kernels
@pytest.mark.parametrize("unit", ["chunk", "user"])
def test_dp_runs_stay_at_or_below_the_accountants_epsilon(patients, words, tmp_path, unit):
    """DP-SGD with σ = 5 (ε about 1.1 per chunk, one-note canaries, or per user, canaries of two notes: below the 1.58
    that 16 right guesses among 32 canaries would show), over three seeds: the bound never exceeds the accountant's ε.
    σ is given, not calibrated: calibrating it took most of the test's time."""
    for seed in SEEDS:
        plant, features = planted_features(patients, words, 32, 1 if unit == "chunk" else 2, seed, unit)
        cfg = RunConfig.from_config(compose_config(["recipe=dp", "train.batch_size=8", "train.epochs=3", "train.lr=3e-3",
                                                    "train.dp.noise_multiplier=5", f"train.dp.unit={unit}"]))
        collator = PrivacyMaskingCollator(words, generator=torch.Generator().manual_seed(seed))
        trainer = PrivateTrainer(cfg.train, seed, tiny_bert(words, seed), features, collator, Accelerator(cpu=True))
        for epoch in range(cfg.train.epochs):
            trainer.set_epoch(epoch)
            collator.generator.manual_seed(seed + 1000 * epoch)
            for _ in trainer.steps():
                pass
        spent = trainer.epoch_report()["epsilon"]
        trainer.save_pretrained(tmp_path / f"{unit}-{seed}")
        trainer.close()
        model = AutoModelForMaskedLM.from_pretrained(tmp_path / f"{unit}-{seed}").eval()
        figures, _ = one_run_figures(model, words, plant, {**spent, "delta": 1e-5, "unit": unit}, 0.95, pseudonym)
        assert 0 < spent["prv"] <= spent["rdp"] <= 1.5 and figures["accountant"] == spent and figures["unit"] == unit
        assert figures["highest_possible"] > 1.5 and figures["epsilon"] <= min(spent.values()), (seed, figures)


# --- the policy -------------------------------------------------------------------------------------------------------

def test_the_policy_compares_the_bound_with_a_number_or_the_accountants_epsilon():
    def figures(bound, dp=None):
        return {"empirical_epsilon": {"epsilon": bound}, "dp": dp}

    dp = {"rdp": 2.0, "prv": 1.5, "delta": 1e-5, "unit": "chunk"}
    against = SharingPolicy(max_empirical_epsilon="accountant")
    [check] = against.check(figures(1.2, dp))[-1:]
    assert check.status == "pass" and check.requirement == "<= the accountant's ε, 1.5 (PRV)"
    assert against.check(figures(1.6, dp))[-1].status == "FAIL"  # the PRV claim is refuted
    [plain] = against.check(figures(0.2))[-1:]
    assert plain.status == "not measured" and "none: trained without DP-SGD" in plain.describe()
    assert against.check({"dp": dp})[-1].status == "not measured"  # no one-run canaries: no evidence
    assert SharingPolicy(max_empirical_epsilon=0.5).check(figures(0.0))[-1].status == "pass"
    assert all(c.figure.startswith("empirical") is False for c in SharingPolicy().check(figures(3.0)))  # opt-in
    for wrong in (-1, "always", True):
        with pytest.raises(PPMLMError, match="max_empirical_epsilon"):
            SharingPolicy(max_empirical_epsilon=wrong)


# --- a run ------------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dp_run(tmp_path_factory):
    """A tiny chunk-level DP run of one epoch with 16 one-run canaries (on by default under DP), audited by the loop."""
    tmp = tmp_path_factory.mktemp("one_run")
    run = train(compose_config([
        TINY_MODEL, f"data.path={small_corpus()}", "recipe=dp", "train.max_length=64", "train.epochs=1",
        "blacklist.ner=none", f"blacklist.cache_dir={tmp / 'cache'}", "audit.reference=none", "audit.neighbours=0",
        "audit.bootstrap_resamples=0", "audit.inversion.enabled=false", "audit.canaries.count=16", "++audit.progress=false",
        "share.max_empirical_epsilon=accountant", f"output_dir={tmp / 'run'}"]))
    return SimpleNamespace(tmp=tmp, run=run, figures=json.loads((run / "audit" / "epoch-1.json").read_text()))


def test_the_runs_audit_signs_the_bound_beside_the_accountants_epsilon(dp_run):
    figures, audit = dp_run.figures, dp_run.run / "audit"
    bound, plant = figures["empirical_epsilon"], load_canaries(dp_run.run / CANARIES_FILE)
    assert figures["signature"] == signature(figures, audit_secret(audit, create=False))
    assert bound["accountant"] == {k: v for k, v in figures["dp"].items() if k not in ("delta", "unit")}
    assert bound["unit"] == "chunk" and bound["delta"] == 1e-5 and bound["confidence"] == 0.95
    assert bound["canaries"] == 16 and bound["included"] == len(plant.trained_users) and figures["canaries"] is None
    assert bound["epsilon"] <= min(bound["accountant"].values())
    rows = [json.loads(line) for line in (audit / "scores-epoch-1-canaries.jsonl").read_text().splitlines()]
    assert sum((row["guess"] == "in") == bool(row["member"]) for row in rows if row["guess"] != "abstain") == bound["correct"]
    split = json.loads((dp_run.run / "split.json").read_text())  # canaries are never in the split the attacks audit
    assert not any(user.startswith(ONE_RUN_PREFIX) for role in ("members", "audit_non_members", "population")
                   for user in split[role])
    report = (audit / "report.html").read_text()
    assert "Empirical ε from one run" in report and "accountant&#x27;s ε" in report
    line = epoch_line(figures, audit)
    assert f"empirical ε ≥ {bound['epsilon']:.2f} per chunk ({bound['correct']} of {bound['guesses']} guesses" in line
    # a secret is 5 digits: as a whole number, not inside the digits of a score ("0.4123456" holds "12345")
    secrets = re.compile("|".join(rf"(?<![\d.]){c.secret}(?![\d.])" for c in plant.canaries))
    for path in audit.iterdir():
        if path.is_file() and path.name != ".salt":
            assert secrets.search(path.read_text()) is None, path.name


def test_ppmlm_audit_reproduces_the_bound_and_the_card_states_it(dp_run, tmp_path):
    from ppmlm.audit.command import audit_command
    from ppmlm.sharing.push import push_run

    again = audit_command(dp_run.run / "checkpoints" / "epoch-1", None, None, dp_run.run / "audit",
                          settings={"progress": False})
    assert again["empirical_epsilon"] == dp_run.figures["empirical_epsilon"]
    push_run(dp_run.run, "org/tiny-dp", local_dir=tmp_path / "out", force=True)
    card = ModelCard.load(tmp_path / "out" / "README.md").text
    row = next(line for line in card.splitlines() if "Empirical ε from one run" in line)
    assert "accountant's ε" in row and "16 canaries" in row and "per chunk" in row
    assert "empirical ε (one run, lower bound) against the accountant's ε" in card
