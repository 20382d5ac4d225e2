"""What the audit samples: every audit non-member and as many members, each user's chunks up to a token
budget, population users lent to the non-member side (and left out of the reference model's training),
all of it recorded in the epoch JSON; bad settings are one-line errors before anything is written."""
import json
from types import SimpleNamespace

import datasets
import pytest
import torch
from conftest import TINY_MODEL

from ppmlm.audit import AuditConfig, run_audit
from ppmlm.audit.outputs import Pseudonyms, read_jsonl
from ppmlm.audit.reference import reference_config
from ppmlm.audit.sampling import build_samples, lent_users, pick_chunks
from ppmlm.corpus.clinical import generate_corpus
from ppmlm.corpus.loading import load_corpus
from ppmlm.corpus.split import split_users
from ppmlm.errors import ConfigError, CorpusError
from ppmlm.identifiers.blacklist import build_blacklist
from ppmlm.pipeline import compose_config, train
from ppmlm.words import WordSegmenter

# what is sampled, not what the attacks find: no neighbours, no probe of every identifier occurrence
FAST = {"progress": False, "maskings": 2, "bootstrap_resamples": 0, "identifiers_from": None, "max_length": 64,
        "neighbours": 0, "privacy_probe": "sampled"}


def test_chunks_are_taken_up_to_the_budget_the_first_one_always():
    lengths = [64, 30, 64, 12, 50, 64, 64, 7]
    for seed in range(20):
        chosen = pick_chunks(lengths, None, 150, torch.Generator().manual_seed(seed))
        assert chosen == sorted(set(chosen)) and 1 <= len(chosen) < len(lengths)
        assert sum(lengths[i] for i in chosen) <= 150
    assert pick_chunks(lengths, None, sum(lengths), torch.Generator()) == list(range(len(lengths)))  # all fit: all
    assert pick_chunks(lengths, None, None, torch.Generator()) == list(range(len(lengths)))
    assert len(pick_chunks(lengths, 3, None, torch.Generator().manual_seed(1))) == 3
    assert len(pick_chunks(lengths, 2, 1000, torch.Generator().manual_seed(1))) == 2  # both limits hold
    assert len(pick_chunks([200, 200], None, 100, torch.Generator())) == 1  # a chunk over the budget alone is still scored
    draws = {tuple(pick_chunks(lengths, None, 150, torch.Generator().manual_seed(seed))) for seed in range(20)}
    assert len(draws) > 1 and pick_chunks(lengths, None, 150, torch.Generator().manual_seed(3)) == \
        pick_chunks(lengths, None, 150, torch.Generator().manual_seed(3))


def test_lent_users_are_a_seeded_choice_of_the_population():
    population = [f"p{i}" for i in range(10)]
    assert lent_users(population, 0, 0) == [] and lent_users(population, 0.0, 0) == []
    three = lent_users(population, 3, 0)
    assert len(three) == 3 and set(three) <= set(population)
    assert lent_users(list(reversed(population)), 3, 0) == three  # not the order of the list
    assert set(three) <= set(lent_users(population, 5, 0))  # lending more keeps those lent
    assert len(lent_users(population, 0.25, 0)) == 2 and len(lent_users(population, 0.5, 0)) == 5
    assert {tuple(lent_users(population, 3, seed)) for seed in range(5)} != {tuple(three)}
    assert lent_users(population, 10, 0) == population


@pytest.mark.parametrize("lend, message", [
    (-1, "audit.lend_population=-1: expected a number of population users"),
    (1.0, "audit.lend_population=1.0: expected a number of population users (an integer of at least 0) or a fraction"),
    (True, "audit.lend_population=True: expected"),
    ("all", "audit.lend_population=all: expected"),
    (11, "audit.lend_population=11: the split has only 10 population users to lend"),
])
def test_a_bad_lending_is_one_line(lend, message):
    with pytest.raises(ConfigError) as error:
        lent_users([f"p{i}" for i in range(10)], lend, 0)
    assert message in str(error.value) and "\n" not in str(error.value)


@pytest.fixture(scope="module")
def audit_setup(bert_tokenizer):
    """Twelve synthetic patients (six members, three audit non-members, three population users), their
    members' blacklist and an untrained tiny BERT: sampling does not depend on what the model learned."""
    from transformers import AutoModelForMaskedLM, BertConfig

    corpus = load_corpus(datasets.Dataset.from_list(generate_corpus(12, seed=3)))
    split = split_users(corpus["user_id"], seed=0, audit_fraction=0.25, population_fraction=0.25)
    assert [len(split.members), len(split.audit_non_members), len(split.population)] == [6, 3, 3]
    members = corpus.filter(lambda user: user in set(split.members), input_columns="user_id")
    blacklist = build_blacklist(members, k=2, n=1, ner="none", progress=False)
    torch.manual_seed(0)
    model = AutoModelForMaskedLM.from_config(BertConfig(vocab_size=len(bert_tokenizer), hidden_size=32, num_hidden_layers=2,
                                                        num_attention_heads=2, intermediate_size=64))
    return SimpleNamespace(corpus=corpus, split=split, blacklist=blacklist, model=model, tokenizer=bert_tokenizer)


def test_build_samples_honours_the_budget_per_user(audit_setup):
    users = {u: True for u in audit_setup.split.members}
    samples, chunks = build_samples(audit_setup.corpus, users, WordSegmenter(), audit_setup.tokenizer, 64, None,
                                    torch.Generator().manual_seed(0), max_tokens_per_user=150)
    every, _ = build_samples(audit_setup.corpus, users, WordSegmenter(), audit_setup.tokenizer, 64, None, torch.Generator())
    assert len(every) == sum(chunks.values()) > len(samples) and set(chunks) == set(users)
    for user in users:
        mine = [s for s in samples if s.user == user]
        assert 1 <= len(mine) < chunks[user] and sum(len(s.input_ids) for s in mine) <= 150


def test_defaults_audit_every_non_member_and_as_many_members_and_say_so(audit_setup, tmp_path):
    setup = audit_setup
    assert AuditConfig().max_users_per_side is None and AuditConfig().max_chunks_per_user is None
    budget = AuditConfig().max_tokens_per_user
    figures = run_audit(setup.model, setup.tokenizer, setup.corpus, setup.split, setup.blacklist, tmp_path, 1,
                        AuditConfig(**FAST))
    audited = figures["audited"]
    assert audited["non_member_users"] == audited["non_member_users_available"] == 3
    assert audited["member_users"] == 3 and audited["member_users_available"] == 6
    assert audited["lent_population_users"] == 0 and audited["max_tokens_per_user"] == budget
    assert audited["max_users_per_side"] is None and audited["max_chunks_per_user"] is None
    for side in ("member", "non_member"):
        assert 3 <= audited[f"{side}_samples"] < audited[f"{side}_chunks_available"]  # 64-token chunks: not all fit
        assert 0 < audited[f"{side}_tokens"] <= 3 * budget
    assert json.loads((tmp_path / "epoch-1.json").read_text())["audited"] == audited

    capped = run_audit(setup.model, setup.tokenizer, setup.corpus, setup.split, setup.blacklist, tmp_path / "capped", 1,
                       AuditConfig(max_users_per_side=2, max_chunks_per_user=1, max_tokens_per_user=None, **FAST))["audited"]
    assert [capped[f"{side}_{what}"] for side in ("member", "non_member") for what in ("users", "samples")] == [2, 2, 2, 2]
    everything = run_audit(setup.model, setup.tokenizer, setup.corpus, setup.split, setup.blacklist, tmp_path / "all", 1,
                           AuditConfig(max_tokens_per_user=None, **FAST))["audited"]
    assert everything["non_member_samples"] == everything["non_member_chunks_available"]


def test_lent_population_users_are_audited_as_non_members(audit_setup, tmp_path):
    setup = audit_setup
    figures = run_audit(setup.model, setup.tokenizer, setup.corpus, setup.split, setup.blacklist, tmp_path, 1,
                        AuditConfig(lend_population=2, **FAST))
    audited = figures["audited"]
    assert audited["lent_population_users"] == 2
    assert audited["non_member_users"] == audited["non_member_users_available"] == 5 and audited["member_users"] == 5
    lent = lent_users(setup.split.population, 2, 0)
    pseudonym = Pseudonyms(tmp_path)
    rows = {row["user"]: row["member"] for row in read_jsonl(tmp_path / "scores-epoch-1-users.jsonl")}
    assert all(rows[pseudonym("user", user)] == 0 for user in lent)
    kept = set(setup.split.population) - set(lent)
    assert not {pseudonym("user", user) for user in kept} & set(rows)  # the rest stays with the reference model


def _config(tmp_path, *extra):
    return compose_config([TINY_MODEL, "data.synth_users=12", "train.max_length=64", "train.epochs=1", "blacklist.ner=none",
                           f"blacklist.cache_dir={tmp_path / 'cache'}", f"++audit.reference_cache_dir={tmp_path / 'references'}",
                           f"output_dir={tmp_path / 'run'}", *extra])


def test_the_reference_trains_on_the_population_less_the_lent_users(tmp_path, bert_tokenizer):
    from accelerate import Accelerator

    from ppmlm.config import RunConfig
    from ppmlm.masking.variants import VARIANTS
    from ppmlm.training.data import prepare

    plain = reference_config(_config(tmp_path))
    lending = reference_config(_config(tmp_path, "audit.lend_population=1"))
    assert plain.output_dir != lending.output_dir  # a reference trained on other users is never reused
    assert reference_config(_config(tmp_path, "audit.lend_population=0.0")).output_dir == plain.output_dir
    data = prepare(RunConfig.from_config(lending), bert_tokenizer, VARIANTS["ppmlm"], Accelerator(cpu=True))
    lent = lent_users(data.split.population, 1, 0)
    assert len(lent) == 1 and len(data.split.population) >= 2
    assert set(data.features["user_id"]) == set(data.split.population) - set(lent)


@pytest.mark.parametrize("setting, error, named", [
    ("audit.lend_population=-2", ConfigError, "audit.lend_population=-2: expected a number of population users"),
    ("audit.lend_population=1.5", ConfigError, "audit.lend_population=1.5: expected a number of population users"),
    ("audit.lend_population=9", ConfigError, "audit.lend_population=9: the split has only 2 population users to lend"),
    ("audit.lend_population=2", CorpusError, "3 population user (2 lent to the audit, audit.lend_population)"),
    ("audit.max_tokens_per_user=0", ConfigError, "audit.max_tokens_per_user=0: expected an integer of at least 1 or null"),
])
def test_bad_sampling_settings_fail_before_anything_is_written(tmp_path, setting, error, named):
    with pytest.raises(error) as raised:
        train(_config(tmp_path, "audit.enabled=true", setting))
    assert named in str(raised.value) and "\n" not in str(raised.value)
    assert not (tmp_path / "run").exists() and not (tmp_path / "references").exists()


def test_ppmlm_audit_takes_the_budget_and_the_lending():
    from ppmlm.cli import build_parser

    args = build_parser().parse_args(["audit", "--model", "m", "--out", "o", "--max-tokens", "0", "--lend-population", "0.25"])
    assert (args.max_tokens, args.lend_population) == (0, 0.25)
    assert build_parser().parse_args(["audit", "--model", "m", "--out", "o", "--lend-population", "3"]).lend_population == 3
    with pytest.raises(SystemExit):
        build_parser().parse_args(["audit", "--model", "m", "--out", "o", "--lend-population", "some"])
