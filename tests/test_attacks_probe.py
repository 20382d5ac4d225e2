"""Probing attacks on tiny models: the name -> attribute inversion and canary exposure (docs/audit.md)."""
from __future__ import annotations

import json
import math
from types import SimpleNamespace

import datasets
import pytest
import torch
from conftest import memorize

from ppmlm.audit import AuditConfig, run_audit
from ppmlm.audit.exposure import exposure_figures
from ppmlm.audit.inversion import InversionSettings
from ppmlm.audit.policy import SharingPolicy
from ppmlm.corpus.canaries import CANARIES_FILE, CanarySettings, plan_canaries, plant_canaries, run_canaries
from ppmlm.corpus.loading import load_corpus
from ppmlm.corpus.split import UserSplit
from ppmlm.errors import ConfigError, PPMLMError
from ppmlm.identifiers.blacklist import build_blacklist

pytestmark = pytest.mark.usefixtures("single_thread")

PEOPLE = [("alvarez", "asthma"), ("brennan", "gout"), ("castillo", "psoriasis"), ("dunbar", "glaucoma"),
          ("ellery", "anemia"), ("fairfax", "vertigo"), ("galloway", "scoliosis"), ("hartwell", "tinnitus")]
FILLERS = ["stable .", "seen today .", "for review ."]
TEMPLATE = ["{name} has {attribute} ."]
QUIET = dict(progress=False, bootstrap_resamples=0, max_tokens_per_user=None, max_length=64)


def note(name: str, condition: str, filler: str) -> tuple[str, list[dict]]:
    """'NAME has CONDITION .' twice, then FILLER, with the names' gold NAME spans."""
    fact = f"{name} has {condition} . "
    return fact * 2 + filler, [{"start": start, "end": start + len(name), "label": "NAME"} for start in (0, len(fact))]


def word_tokenizer(directory, texts: list[str], extra: list[str] = ()):
    """Every word one token, so that a tiny model memorizes within seconds."""
    from transformers import AutoTokenizer

    words = sorted({w for text in texts for w in text.split()} | set(extra))
    (directory / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    (directory / "config.json").write_text('{"model_type": "bert"}')
    return AutoTokenizer.from_pretrained(str(directory))


def trained(tokenizer, members, blacklist, variant: str, steps: int = 500):
    """A tiny BERT trained on the members' notes with the collator and loss of training."""
    from transformers import AutoModelForMaskedLM, BertConfig

    from ppmlm.features import FEATURE_COLUMNS, build_features
    from ppmlm.masking.variants import VARIANTS, protected_view

    features = build_features(members, protected_view(blacklist, VARIANTS[variant]), tokenizer, max_length=64)
    features = features.select_columns(list(FEATURE_COLUMNS)).to_list()
    torch.manual_seed(0)
    model = AutoModelForMaskedLM.from_config(BertConfig(vocab_size=len(tokenizer), hidden_size=64, num_hidden_layers=2,
                                                        num_attention_heads=2, intermediate_size=128))
    return memorize(model, features, tokenizer, steps, 0, 1)


@pytest.fixture(scope="module")
def patients(tmp_path_factory):
    """Eight patients (four members), three notes each: 'NAME has CONDITION .' and a shared filler sentence."""
    records = []
    for u, (name, condition) in enumerate(PEOPLE):
        for d, filler in enumerate(FILLERS):
            text, phi = note(name, condition, filler)
            records.append({"doc_id": f"u{u}d{d}", "user_id": f"u{u}", "text": text, "phi": phi})
    corpus = load_corpus(datasets.Dataset.from_list(records))
    split = UserSplit(0, 0.5, 0.0, members=[f"u{u}" for u in range(4)], audit_non_members=[f"u{u}" for u in range(4, 8)])
    members = corpus.filter(lambda user: user in set(split.members), input_columns="user_id")
    tokenizer = word_tokenizer(tmp_path_factory.mktemp("words"), [r["text"] for r in records])
    blacklist = build_blacklist(members, k=2, n=1, ner="none", spans_from="phi", progress=False)
    return SimpleNamespace(corpus=corpus, split=split, members=members, tokenizer=tokenizer, blacklist=blacklist)


def inversion_of(setup, model, out_dir) -> dict:
    config = AuditConfig(**QUIET, inversion=InversionSettings(templates=tuple(TEMPLATE)))
    return run_audit(model, setup.tokenizer, setup.corpus, setup.split, setup.blacklist, out_dir, 1, config)


def test_inversion_ranks_a_memorized_attribute_first(patients, tmp_path):
    plain = inversion_of(patients, trained(patients.tokenizer, patients.members, patients.blacklist, "mlm"), tmp_path / "mlm")
    inversion = plain["inversion"]
    assert inversion["names_from"] == "gold spans of corpus column 'phi'"
    assert inversion["candidates"] == len(PEOPLE)  # every patient's condition, members' and non-members'
    assert inversion["member"]["pairs"] == inversion["non_member"]["pairs"] == 4  # one condition each
    assert inversion["member"]["top_1"]["value"] == 1.0  # the model says each member's own condition
    assert inversion["non_member"]["top_1"]["value"] <= 0.5  # it never saw the non-members: a guess
    low, high = inversion["member"]["top_1"]["ci"]
    assert low < 1.0 == high  # four pairs only: the interval says so
    rows = [json.loads(line) for line in (tmp_path / "mlm" / "scores-epoch-1-inversion.jsonl").read_text().splitlines()]
    assert sum(row["rank"] == 1 for row in rows if row["member"]) == 4  # the figures recompute from the scores file
    assert not {name for name, _ in PEOPLE} & {value for row in rows for value in map(str, row.values())}

    protected = inversion_of(patients, trained(patients.tokenizer, patients.members, patients.blacklist, "ppmlm"),
                             tmp_path / "ppmlm")["inversion"]
    assert protected["member"]["top_1"]["value"] < 1.0  # conditions are indirect identifiers: never learnt as answers

    policy = SharingPolicy(max_inversion_top100_accuracy=0.3, max_canary_exposure=None)  # 4 of 4: interval [0.40, 1]
    [check] = [c for c in policy.check(plain) if c.figure.startswith("inversion")]
    assert check.status == "FAIL" and check.value == 1.0


def test_inversion_settings_are_checked():
    with pytest.raises(ConfigError, match="audit.inversion.templates"):
        InversionSettings.parse({"templates": ["{name} only"]})
    with pytest.raises(ConfigError, match="audit.inversion.templates='medical'"):
        InversionSettings.parse({"templates": "medical"})
    with pytest.raises(ConfigError, match="audit.inversion.attributes_per_user=0"):
        InversionSettings.parse({"attributes_per_user": 0})
    assert InversionSettings.parse({"templates": "legal"}).template_list


@pytest.fixture(scope="module")
def canary_corpus(tmp_path_factory):
    """The patients with 16 notes each, and three canaries of three digits planted 1, 4 and 16 times in three members."""
    records = []
    for u, (name, condition) in enumerate(PEOPLE):
        for d in range(16):
            records.append({"doc_id": f"u{u}d{d:02d}", "user_id": f"u{u}", "text": note(name, condition, FILLERS[d % 3])[0]})
    corpus = load_corpus(datasets.Dataset.from_list(records))
    members = [f"u{u}" for u in range(6)]
    canaries = plan_canaries(corpus, members, CanarySettings(enabled=True, repetitions=(1, 4, 16), digits=3, seed=3))
    planted = plant_canaries(corpus, canaries)
    # numbers as WordPiece writes them, digit by digit ("1", "##9", "##9"): every candidate shares its tokens with the
    # others, as in a real vocabulary (a token of its own would stand out merely for having been seen as context)
    tokenizer = word_tokenizer(tmp_path_factory.mktemp("digits"), list(planted["text"]) + ["the ."],
                               extra=[f"{prefix}{digit}" for prefix in ("", "##") for digit in range(10)])
    trained_on = planted.filter(lambda user: user in set(members), input_columns="user_id")
    blacklist = build_blacklist(trained_on, k=2, n=1, ner="none", progress=False)
    return SimpleNamespace(canaries=canaries, planted=planted, trained_on=trained_on, tokenizer=tokenizer,
                           blacklist=blacklist, members=members)


def test_canaries_are_planted_as_recorded(canary_corpus, tmp_path):
    canaries = canary_corpus.canaries
    assert [c.repetitions for c in canaries] == [1, 4, 16] and len({c.user for c in canaries}) == 3
    assert all(c.user in canary_corpus.members and len(set(c.documents)) == c.repetitions for c in canaries)  # a note each
    for canary in canaries:
        texts = [t for t, u in zip(canary_corpus.planted["text"], canary_corpus.planted["user_id"]) if u == canary.user]
        assert sum(t.count(canary.sentence) for t in texts) == canary.repetitions
    assert all(canary.secret in canary_corpus.blacklist.terms for canary in canaries)  # one user writes it: indirect

    corpus = load_corpus(datasets.Dataset.from_list([{"doc_id": d, "user_id": u, "text": t} for d, u, t in zip(
        canary_corpus.planted["doc_id"], canary_corpus.planted["user_id"], canary_corpus.planted["text"])]))
    section = {"enabled": True, "repetitions": [2, 3], "digits": 4, "seed": 1}
    planted, first = run_canaries(tmp_path, corpus, canary_corpus.members, section, record=True)
    assert (tmp_path / CANARIES_FILE).is_file()
    _, again = run_canaries(tmp_path, corpus, canary_corpus.members, {**section, "seed": 2}, record=True)
    assert again == first  # a resumed run reads the recorded plant, whatever the settings say now
    assert run_canaries(tmp_path / "other", corpus, canary_corpus.members, None, record=True) == (corpus, [])
    with pytest.raises(ConfigError, match=r"audit.canaries.repetitions=\[0\]"):
        CanarySettings.parse({"enabled": True, "repetitions": [0]})
    with pytest.raises(ConfigError, match="audit.canaries.digits=9"):
        CanarySettings.parse({"digits": 9})


def test_canary_exposure_rises_with_repetitions_under_mlm_and_stays_low_when_blacklisted(canary_corpus):
    setup = canary_corpus
    bits = math.log2(1000)
    untrained = exposure_figures(trained(setup.tokenizer, setup.trained_on, setup.blacklist, "mlm", steps=0), setup.tokenizer,
                                 setup.canaries)
    plain = exposure_figures(trained(setup.tokenizer, setup.trained_on, setup.blacklist, "mlm"), setup.tokenizer,
                             setup.canaries)
    protected = exposure_figures(trained(setup.tokenizer, setup.trained_on, setup.blacklist, "ppmlm"), setup.tokenizer,
                                 setup.canaries)
    assert plain["candidates"] == 1000 and plain["max_exposure"] == pytest.approx(bits)
    exposure = {row["repetitions"]: row["exposure"] for row in plain["canaries"]}
    seen = f"mlm {plain['canaries']}, ppmlm {protected['canaries']}, untrained {untrained['canaries']}"
    assert exposure[16] > bits / 2, seen  # among the top 3% of a thousand
    assert exposure[1] <= exposure[16] and exposure[4] <= exposure[16], seen
    assert protected["highest_exposure"] < bits / 2 and untrained["highest_exposure"] < bits / 2, seen
    assert plain["highest_exposure"] == exposure[16]
    [check] = SharingPolicy(max_canary_exposure=bits / 2).check({"canaries": plain})[-1:]
    assert check.figure == "canary exposure (highest, bits)" and check.status == "FAIL"
    assert SharingPolicy(max_canary_exposure=bits / 2).check({"canaries": protected})[-1].status == "pass"
    with pytest.raises(PPMLMError, match="max_canary_exposure=-1"):
        SharingPolicy(max_canary_exposure=-1)
