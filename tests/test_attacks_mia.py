"""The reference-calibrated (RMIA) and neighbourhood membership attacks on tiny models: a model trained to
memorize its members' notes is found at a low false-positive rate, an untrained one is at chance within its
interval; the scores recompute from the scores files; the policy, report and card name both attacks."""
import re
from types import SimpleNamespace

import datasets
import numpy as np
import pytest
import torch
from conftest import memorize

from ppmlm.audit import AuditConfig, run_audit
from ppmlm.audit.neighbourhood import Substitutes, chosen_chunks, replacements
from ppmlm.audit.outputs import population_scores_path, read_jsonl, scores_paths
from ppmlm.audit.policy import SharingPolicy
from ppmlm.audit.rmia import log_ratio, rmia_scores
from ppmlm.audit.runner import NO_POPULATION
from ppmlm.audit.sampling import Sample
from ppmlm.corpus.loading import load_corpus
from ppmlm.corpus.split import UserSplit
from ppmlm.errors import PPMLMError
from ppmlm.identifiers.blacklist import build_blacklist
from ppmlm.sharing.card import _attack_rows

ANIMALS = ["walrus", "falcon", "dolphin", "pelican", "giraffe", "otter", "badger", "heron", "lynx", "moose", "panda", "zebra",
           "koala", "llama", "bison", "camel", "eagle", "gecko", "hyena", "iguana", "jaguar", "lemur", "newt", "ocelot",
           "puffin", "quail", "raven", "salmon", "tapir", "urchin"]
THINGS = ["violin", "lantern", "canyon", "orchid", "glacier", "pepper", "cactus", "velvet", "maple", "hammock", "tulip",
          "copper", "anchor", "marble", "meadow", "harbor", "saxophone", "tornado", "kettle", "ribbon", "pebble", "candle",
          "mirror", "basket", "ladder", "compass", "feather", "button", "helmet", "blanket"]
TEMPLATES = ["the patient talked about {} and {} at the visit .", "a nurse wrote that {} reminds them of {} .",
             "family said the {} and the {} matter a lot .", "we discussed {} then {} before discharge ."]
MEMBERS, NON_MEMBERS, POPULATION = range(0, 12), range(12, 24), range(24, 30)
FAST = {"progress": False, "bootstrap_resamples": 200, "max_length": 64}

pytestmark = pytest.mark.kernels  # attack figures of a memorizing tiny model: float results of the kernels


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """Thirty users, each with a distinctive pair of words in three notes of four sentences; a word-level
    tokenizer with every word one token. Twelve members, twelve audit non-members, six population users that
    only the reference model trains on."""
    from transformers import AutoTokenizer

    records = [{"doc_id": f"u{u}d{d}", "user_id": f"u{u}",
                "text": " ".join(t.format(ANIMALS[u], THINGS[u]) for t in TEMPLATES[d:] + TEMPLATES[:d])}
               for u in range(30) for d in range(3)]
    directory = tmp_path_factory.mktemp("word_tokenizer")
    words = sorted({w for r in records for w in r["text"].split()})
    (directory / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    (directory / "config.json").write_text('{"model_type": "bert"}')
    tokenizer = AutoTokenizer.from_pretrained(str(directory))
    corpus = load_corpus(datasets.Dataset.from_list(records))
    split = UserSplit(0, 0.4, 0.2, members=[f"u{u}" for u in MEMBERS], audit_non_members=[f"u{u}" for u in NON_MEMBERS],
                      population=[f"u{u}" for u in POPULATION])
    members = corpus.filter(lambda user: user in set(split.members), input_columns="user_id")
    population = corpus.filter(lambda user: user in set(split.population), input_columns="user_id")
    blacklist = build_blacklist(members, k=2, n=1, ner="none", progress=False)
    return SimpleNamespace(tokenizer=tokenizer, corpus=corpus, split=split, blacklist=blacklist,
                           memorizing=trained(tokenizer, members, seed=0), reference=trained(tokenizer, population, seed=1),
                           untrained=tiny_bert(len(tokenizer), seed=2))


def tiny_bert(vocab_size: int, seed: int):
    from transformers import AutoModelForMaskedLM, BertConfig

    torch.manual_seed(seed)
    return AutoModelForMaskedLM.from_config(BertConfig(vocab_size=vocab_size, hidden_size=64, num_hidden_layers=2,
                                                       num_attention_heads=2, intermediate_size=128))


def trained(tokenizer, corpus, seed: int, steps: int = 250):
    """A tiny BERT trained on `corpus` with the collator and loss of training (plain mlm): it memorizes the pairs."""
    from ppmlm.features import FEATURE_COLUMNS, build_features

    features = build_features(corpus, None, tokenizer, max_length=64).select_columns(list(FEATURE_COLUMNS)).to_list()
    return memorize(tiny_bert(len(tokenizer), seed), features, tokenizer, steps, seed, seed + 100)


def audit(setup, model, out, **settings):
    """One chunk per audited user, so the non-members' two other chunks are the RMIA population; γ = 2: with 24
    population chunks a non-member beats them all by chance (1 in 23), and ties at 1 with every member at γ = 1."""
    config = AuditConfig(max_chunks_per_user=1, max_tokens_per_user=None, rmia_population_chunks=24, rmia_gamma=2.0, neighbours=8,
                         neighbour_words=2, maskings=10, neighbour_maskings=10, **FAST, **settings)
    return run_audit(model, setup.tokenizer, setup.corpus, setup.split, setup.blacklist, out, 1, config,
                     reference=setup.reference)


@pytest.fixture(scope="module")
def audits(setup, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("audits")
    no_reference = run_audit(setup.memorizing, setup.tokenizer, setup.corpus, setup.split, setup.blacklist, tmp / "alone", 1,
                             AuditConfig(max_chunks_per_user=1, **FAST))
    return SimpleNamespace(memorizing=audit(setup, setup.memorizing, tmp / "memorizing"), memorizing_dir=tmp / "memorizing",
                           untrained=audit(setup, setup.untrained, tmp / "untrained"), no_reference=no_reference)


@pytest.mark.parametrize("attack", ["rmia", "neighbourhood"])
def test_a_memorizing_model_is_found_at_a_low_false_positive_rate(audits, attack):
    for level in ("sample", "user"):
        result = audits.memorizing["attacks"][attack][level]
        assert result["members"] == result["non_members"] == 12
        assert result["tpr_at_fpr"]["0.1"] >= 0.5 and result["tpr_at_fpr_ci"]["0.1"][0] > 0.1, (level, result)
        assert result["auc"] >= 0.85 and result["auc_ci"][0] > 0.5


@pytest.mark.parametrize("attack", ["rmia", "neighbourhood"])
def test_an_untrained_model_is_at_chance_within_its_interval(audits, attack):
    for level in ("sample", "user"):
        result = audits.untrained["attacks"][attack][level]
        assert result["auc_ci"][0] <= 0.5 <= result["auc_ci"][1], (level, result)
        assert result["tpr_at_fpr_ci"]["0.1"][0] <= 0.1 <= result["tpr_at_fpr_ci"]["0.1"][1], (level, result)


def test_without_a_reference_the_neighbourhood_attack_runs_by_default(audits):
    """neighbours null: the reference-free attack takes the place of the reference pass the audit does not make (at
    this default budget it is weak: one word swapped, two maskings; docs/audit.md)."""
    alone = audits.no_reference
    assert alone["reference"] is None and alone["attacks"]["rmia"]["user"] is None
    assert alone["audited"]["neighbourhood_samples"] == 24 and alone["audited"]["neighbours"] > 24
    assert alone["attacks"]["neighbourhood"]["user"]["members"] == 12
    assert audits.memorizing["config"]["neighbours"] == 8


def test_the_scores_recompute_from_the_scores_files(audits):
    """rmia_score from the log ratios of the samples file and the population file (leaving out each sample's own
    user), the log ratios from the losses, the neighbourhood score from its two losses; the figures from the scores."""
    from sklearn.metrics import roc_auc_score

    out, figures = audits.memorizing_dir, audits.memorizing
    samples_path, users_path = scores_paths(out, 1)
    samples, users, population = read_jsonl(samples_path), read_jsonl(users_path), read_jsonl(population_scores_path(out, 1))
    config = figures["config"]
    assert len(population) == figures["audited"]["rmia_population_chunks"] == 24  # two spare chunks per non-member
    assert not {row["user"] for row in population} - {row["user"] for row in samples if not row["member"]}
    for row in samples + population:
        assert row["rmia_log_ratio"] == pytest.approx(log_ratio(row["loss"], row["reference_loss"], config["rmia_offline_a"]))
    for row in samples:
        others = [z["rmia_log_ratio"] for z in population if z["user"] != row["user"]]
        assert row["rmia_score"] == pytest.approx(np.mean([row["rmia_log_ratio"] - z >= np.log(config["rmia_gamma"])
                                                           for z in others]))
        assert row["neighbourhood_score"] == pytest.approx(row["neighbour_loss"] - row["neighbourhood_loss"])
        assert 1 <= row["neighbours"] <= 8
    for attack in ("rmia", "neighbourhood"):
        for level, rows in (("sample", samples), ("user", users)):
            assert roc_auc_score([r["member"] for r in rows], [r[f"{attack}_score"] for r in rows]) == pytest.approx(
                figures["attacks"][attack][level]["auc"])


def test_rmia_never_compares_a_sample_with_its_own_user():
    assert rmia_scores([0.0, 1.0, None], ["a", "b", "a"], [0.5, -1.0, 2.0], ["a", "b", "c"], 1.0) == [0.5, 0.5, None]
    assert rmia_scores([0.0], ["a"], [0.5], ["a"], 1.0) == [None]  # only its own user's chunks: no population
    assert rmia_scores([0.0], ["a"], [-0.3, -0.5], ["b", "c"], 1.5) == [0.5]  # gamma: beating z by a factor 1.5 (log 0.41)
    assert log_ratio(2.0, 3.0, 1.0) == pytest.approx(1.0)  # a = 1: the per-token likelihood ratio itself
    assert log_ratio(2.0, 3.0, 0.0) == pytest.approx(-2.0 - np.log((np.exp(-3.0) + 1) / 2))


def test_neighbours_replace_whole_words_with_the_models_guesses(setup, tmp_path):
    tokenizer = setup.tokenizer
    substitutes = Substitutes(tokenizer)
    assert substitutes.usable(tokenizer.convert_tokens_to_ids("walrus"))
    assert not substitutes.usable(tokenizer.convert_tokens_to_ids(".")) and not substitutes.usable(tokenizer.mask_token_id)
    word_ids = np.array([-1, 0, 1, 1, 2, 3, -1])  # word 1 has two tokens: never replaced
    sample = Sample("u", "d", 0, True, np.arange(7) + 5, word_ids, ["a", "b", "c", None])
    plan = replacements(sample, 5, 1, torch.Generator().manual_seed(0))
    assert len(plan) == 5 and set(np.concatenate(plan).tolist()) == {0, 2}
    assert replacements(sample, 2, 3, torch.Generator()) is None  # fewer one-token words than asked
    samples = [Sample(user, "d", c, True, np.arange(3), np.array([-1, 0, -1]), ["a"]) for user in "aab" for c in (0,)]
    assert chosen_chunks(samples, 1) == [0, 2] and chosen_chunks(samples, None) == [0, 1, 2]

    figures = run_audit(setup.memorizing, tokenizer, setup.corpus, setup.split, setup.blacklist, tmp_path, 1,
                        AuditConfig(max_chunks_per_user=1, neighbours=0, rmia_population_chunks=0, **FAST))
    assert figures["attacks"]["neighbourhood"]["user"] is None and figures["attacks"]["rmia"]["user"] is None  # turned off
    assert figures["audited"]["neighbours"] == figures["audited"]["rmia_population_chunks"] == 0


def test_rmia_without_a_population_chunk_says_why_it_did_not_run(setup, tmp_path, capsys):
    """Every chunk of the audited users scored (no token limit, as `ppmlm audit --max-tokens 0`): none is left to be
    RMIA's population, and the audit says so, with the reason, on the console, in epoch-N.json, the report and the
    card; attacks turned off say why as well."""
    figures = run_audit(setup.untrained, setup.tokenizer, setup.corpus, setup.split, setup.blacklist, tmp_path, 1,
                        AuditConfig(max_tokens_per_user=None, neighbours=0, maskings=2, neighbour_maskings=1, **FAST),
                        reference=setup.reference)
    assert figures["audited"]["member_samples"] == 36 and figures["audited"]["rmia_population_chunks"] == 0  # 3 chunks each
    assert figures["attacks"]["rmia"] == {"sample": None, "user": None}
    assert figures["attacks_not_run"] == {"rmia": NO_POPULATION, "neighbourhood": "audit.neighbours is 0"}
    assert f"rmia not run: {NO_POPULATION}" in capsys.readouterr().out
    assert "not run: no population chunk: the audit scores every chunk" in (tmp_path / "report.html").read_text()
    assert f"| reference-calibrated (RMIA) | user | not run: {NO_POPULATION} |" in "\n".join(_attack_rows(figures))
    alone = run_audit(setup.untrained, setup.tokenizer, setup.corpus, setup.split, setup.blacklist, tmp_path / "alone", 1,
                      AuditConfig(max_chunks_per_user=1, neighbours=0, maskings=2, neighbour_maskings=1, **FAST))
    assert alone["attacks_not_run"] == {"likelihood_ratio": "no reference model (audit.reference none)",
                                        "rmia": "no reference model (audit.reference none)",
                                        "neighbourhood": "audit.neighbours is 0"}


def test_the_policy_report_and_card_name_both_attacks(audits):
    policy = SharingPolicy.from_config({"max_tpr_at_1pct_fpr": {"rmia": 0.2, "neighbourhood": None}})
    checks = {c.figure: c for c in policy.check(audits.memorizing)}
    assert checks["rmia TPR at 1% FPR (sample)"].threshold == 0.2
    assert checks["neighbourhood TPR at 1% FPR (user)"].requirement == "not checked"
    with pytest.raises(PPMLMError, match="unknown attack 'rmia2'"):
        SharingPolicy().with_command_line(max_tpr=["rmia2=0.1"])
    assert SharingPolicy().with_command_line(max_tpr=["neighbourhood=0.3"]).max_tpr_at_1pct_fpr["neighbourhood"] == 0.3
    report = (audits.memorizing_dir / "report.html").read_text()
    assert "Reference-calibrated (RMIA" in report and "Neighbourhood (Mattern" in report
    rows = _attack_rows(audits.memorizing)  # the card: an AUC with its interval per attack
    for name in ("reference-calibrated (RMIA)", "neighbourhood"):
        assert [row for row in rows if re.match(rf"\| {re.escape(name)} \| user \| [01]\.\d{{3}} \[", row)], rows  # AUC [ci]
    assert "| reference-calibrated (RMIA) | user | not run" in "\n".join(_attack_rows(audits.no_reference))


def test_bad_attack_settings_are_refused():
    for settings in ({"rmia_offline_a": 1.5}, {"rmia_gamma": 0}, {"rmia_population_chunks": -1}, {"neighbours": -1},
                     {"rmia_population_maskings": 0},
                     {"neighbour_words": 0}, {"neighbour_maskings": 11}, {"neighbour_chunks_per_user": 0}):
        with pytest.raises(ValueError, match=next(iter(settings))):
            AuditConfig(**settings)
    assert AuditConfig().neighbours_with(reference=None) == 4 and AuditConfig().neighbours_with(reference=object()) == 0
    assert AuditConfig(neighbours=2).neighbours_with(reference=object()) == 2
