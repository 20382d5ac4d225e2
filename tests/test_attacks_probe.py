"""Probing attacks on tiny models: the name -> attribute inversion and canary exposure (docs/audit.md)."""
from __future__ import annotations

import json
import math
import statistics
from types import SimpleNamespace

import datasets
import pytest
import torch
from conftest import memorize, word_tokenizer

from ppmlm.audit import AuditConfig, run_audit
from ppmlm.audit.exposure import exposure_figures
from ppmlm.audit.inversion import InversionSettings
from ppmlm.audit.policy import SharingPolicy
from ppmlm.corpus.canaries import CANARIES_FILE, CanarySettings, plan_canaries, plant_canaries, run_canaries
from ppmlm.corpus.loading import load_corpus
from ppmlm.corpus.split import UserSplit
from ppmlm.errors import ConfigError, PPMLMError
from ppmlm.identifiers.blacklist import build_blacklist

PEOPLE = [("alvarez", "asthma"), ("brennan", "gout"), ("castillo", "psoriasis"), ("dunbar", "glaucoma"),
          ("ellery", "anemia"), ("fairfax", "vertigo"), ("galloway", "scoliosis"), ("hartwell", "tinnitus")]
FILLERS = ["stable .", "seen today .", "for review ."]
TEMPLATE = ["{name} has {attribute} ."]
QUIET = dict(progress=False, bootstrap_resamples=0, max_tokens_per_user=None, max_length=64)
# the inversion test reads the inversion alone: one masking per chunk, no neighbours, no full privacy probe
INVERSION_ONLY = dict(QUIET, maskings=1, neighbour_maskings=1, neighbours=0, privacy_probe="sampled")

pytestmark = pytest.mark.kernels  # what a tiny model memorizes varies with the kernels: claimed over seeds


def note(name: str, condition: str, filler: str) -> tuple[str, list[dict]]:
    """'NAME has CONDITION .' twice, then FILLER, with the names' gold NAME spans."""
    fact = f"{name} has {condition} . "
    return fact * 2 + filler, [{"start": start, "end": start + len(name), "label": "NAME"} for start in (0, len(fact))]


SEEDS = (0, 1, 2)  # a tiny model's memorization varies with its seed and the processor's kernels: claims hold over seeds


def trained(tokenizer, members, blacklist, variant: str, steps: int, seed: int):
    """A tiny BERT trained on the members' notes with the collator and loss of training."""
    from transformers import AutoModelForMaskedLM, BertConfig

    from ppmlm.features import FEATURE_COLUMNS, build_features
    from ppmlm.masking.variants import VARIANTS, protected_view

    features = build_features(members, protected_view(blacklist, VARIANTS[variant]), tokenizer, max_length=64)
    features = features.select_columns(list(FEATURE_COLUMNS)).to_list()
    torch.manual_seed(seed)
    model = AutoModelForMaskedLM.from_config(BertConfig(vocab_size=len(tokenizer), hidden_size=64, num_hidden_layers=2,
                                                        num_attention_heads=2, intermediate_size=128))
    return memorize(model, features, tokenizer, steps, seed, seed + 1)


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
    config = AuditConfig(**INVERSION_ONLY, inversion=InversionSettings(templates=tuple(TEMPLATE)))
    return run_audit(model, setup.tokenizer, setup.corpus, setup.split, setup.blacklist, out_dir, 1, config)


def test_inversion_ranks_a_memorized_attribute_first(patients, tmp_path):
    """Over three seeds, 200 steps each. Measured on AVX2 and default kernels, seeds 0-5 each (the same figures on
    both): a member's own condition is ranked first in 75-100% of a seed's pairs (100% in 4 of 6 seeds), a
    non-member's in none, under ppmlm in 0-25%. 300 steps are no better (one seed of six at 25-50%)."""
    def top_1(variant: str, seed: int) -> dict:
        model = trained(patients.tokenizer, patients.members, patients.blacklist, variant, steps=200, seed=seed)
        return inversion_of(patients, model, tmp_path / f"{variant}-{seed}")["inversion"]

    plain = {seed: top_1("mlm", seed) for seed in SEEDS}
    protected = {seed: top_1("ppmlm", seed) for seed in SEEDS}
    inversion = plain[SEEDS[0]]
    assert inversion["names_from"] == "gold spans of corpus column 'phi'"
    assert inversion["candidates"] == len(PEOPLE)  # every patient's condition, members' and non-members'
    assert inversion["member"]["pairs"] == inversion["non_member"]["pairs"] == 4  # one condition each

    def pooled(runs, side):
        return sum(run[side]["top_1"]["value"] for run in runs.values()) / len(runs)

    seen = {f"{name} {side}": [run[side]["top_1"]["value"] for run in runs.values()]
            for name, runs in (("mlm", plain), ("ppmlm", protected)) for side in ("member", "non_member")}
    assert pooled(plain, "member") >= 0.5, seen  # the model says most members' own condition; chance is 1/8
    assert pooled(plain, "non_member") <= 0.25, seen  # it never saw the non-members: a guess
    assert pooled(protected, "member") <= min(0.5, pooled(plain, "member") - 0.25), seen  # never learnt as answers
    for seed, run in plain.items():
        low, high = run["member"]["top_1"]["ci"]
        assert low <= run["member"]["top_1"]["value"] <= high and high - low > 0.3  # four pairs only: the interval says so
        rows = [json.loads(line) for line in (tmp_path / f"mlm-{seed}" / "scores-epoch-1-inversion.jsonl").read_text()
                .splitlines()]
        ranked_first = sum(row["rank"] == 1 for row in rows if row["member"])
        assert ranked_first == round(4 * run["member"]["top_1"]["value"])  # the figures recompute from the scores file
        assert not {name for name, _ in PEOPLE} & {value for row in rows for value in map(str, row.values())}

    policy = SharingPolicy(max_inversion_top100_accuracy=0.3, max_canary_exposure=None)  # top-100 of 8 candidates: 1
    [check] = [c for c in policy.check({"inversion": inversion}) if c.figure.startswith("inversion")]
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
    """Over three seeds, 150 steps each. Measured on AVX2 and default kernels, seeds 0-5 each (the same figures on
    both): the canary planted 16 times ranked first of 1,000 under mlm in 5 of 6 seeds, and 8th (6.97 bits) in the
    other; blacklisted (ppmlm) or untrained, exposures at chance, where a random rank gives 1.44 bits on average
    and more than 5 bits one time in 32 (1 of 18 ppmlm canaries did; the mean of any three seeds' nine exposures was
    1.0-1.6 bits). At 250 steps, measured before, the same picture at 1.7 times the cost."""
    setup = canary_corpus
    bits = math.log2(1000)

    def exposures(variant: str, steps: int = 150) -> list[dict]:
        return [exposure_figures(trained(setup.tokenizer, setup.trained_on, setup.blacklist, variant, steps=steps, seed=seed),
                                 setup.tokenizer, setup.canaries) for seed in SEEDS]

    untrained, plain, protected = exposures("mlm", steps=0), exposures("mlm"), exposures("ppmlm")
    assert all(run["candidates"] == 1000 and run["max_exposure"] == pytest.approx(bits) for run in plain)
    by_repetitions = [{row["repetitions"]: row["exposure"] for row in run["canaries"]} for run in plain]
    seen = f"mlm {by_repetitions}, ppmlm {[r['canaries'] for r in protected]}, untrained {[r['canaries'] for r in untrained]}"

    def median(values):
        return statistics.median(values)

    assert median([e[16] for e in by_repetitions]) > bits / 2, seen  # among the top 3% of a thousand
    assert median([e[1] for e in by_repetitions]) <= median([e[16] for e in by_repetitions]), seen
    assert median([e[4] for e in by_repetitions]) <= median([e[16] for e in by_repetitions]), seen
    for runs in (protected, untrained):  # nine exposures at chance: mean 1.44 bits, standard error 0.48
        assert statistics.mean(row["exposure"] for run in runs for row in run["canaries"]) < bits / 3, seen
    assert all(run["highest_exposure"] == max(row["exposure"] for row in run["canaries"]) for run in plain)

    policy = SharingPolicy(max_canary_exposure=bits / 2)
    [check] = policy.check({"canaries": min(plain, key=lambda run: run["highest_exposure"])})[-1:]
    assert check.figure == "canary exposure (highest, bits)" and check.status == "FAIL"
    assert policy.check({"canaries": min(protected, key=lambda run: run["highest_exposure"])})[-1].status == "pass", seen
    with pytest.raises(PPMLMError, match="max_canary_exposure=-1"):
        SharingPolicy(max_canary_exposure=-1)
