"""The detector trained on a team's annotations: training a tiny tagger, the folds by user, its bad inputs, the
rules and the detector together in ppmlm blacklist, and that push never exports one."""
from __future__ import annotations

import json
import random
from dataclasses import replace

import datasets
import pytest
import torch
from conftest import ROOT

from ppmlm.cli import main
from ppmlm.corpus.loading import load_corpus
from ppmlm.detector.card import write_card
from ppmlm.detector.directory import DetectorError
from ppmlm.detector.examples import labelled_windows, user_folds
from ppmlm.detector.training import TrainingSettings, train_detector
from ppmlm.errors import CorpusError, PPMLMError
from ppmlm.identifiers.ner import DetectorSettings, NERError, Span, load_ner
from ppmlm.sharing.push import push_run

PLANTED = "Quirinus Zabrowski"  # in no vocabulary, no gazetteer: only training can teach it
FILLERS = ["Pain controlled with oral meds.", "Afebrile overnight, vitals stable.", "Tolerating diet, ambulating.",
           "Wound clean and dry.", "Plan reviewed with the team.", "Labs pending this morning."]
CONTEXTS = ["Visited by {} this afternoon.", "{} called the unit twice.", "Discussed the plan with {} at bedside.",
            "Son {} will bring clothes.", "Spoke to {} about discharge."]
SETTINGS = TrainingSettings(epochs=40, patience=40, batch_size=8, lr=3e-3, head_lr=1e-2, warmup=0.0, max_length=64,
                            stride=16, layers=None, held_out=0.25, target_recall=0.99, seed=0)


DECOYS = ["the chaplain", "the night nurse", "the dietitian", "the ward clerk"]  # in the same contexts, not annotated


def annotated_note(rng: random.Random, name: str) -> dict:
    """A short note with the name in one context and a decoy in another, between fillers, and the name's gold span:
    the contexts alone do not tell a name, its words do."""
    first, second = rng.sample(CONTEXTS, 2)
    sentences = [first.format(name), second.format(rng.choice(DECOYS)), *rng.sample(FILLERS, 2)]
    rng.shuffle(sentences)
    text = " ".join(sentences)
    start = text.index(name)
    return {"text": text, "phi": [{"start": start, "end": start + len(name), "label": "NAME"}]}


def annotated_records(users: int, notes: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    return [{"user_id": f"u{u}", "doc_id": f"u{u}-{n}", **annotated_note(rng, PLANTED)}
            for u in range(users) for n in range(notes)]


def write_jsonl(records: list[dict], path):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory):
    """A 2-layer BERT of hidden size 64 built from a config, with the warm start's (uncased WordPiece) tokenizer."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    from ppmlm.models import default_model_path

    directory = tmp_path_factory.mktemp("tiny_encoder")
    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=128, max_position_embeddings=128)
    torch.manual_seed(0)  # the same encoder whatever ran before in this worker process
    BertModel(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def detector(tiny_encoder, tmp_path_factory):
    """A tiny detector trained on 8 users' notes that all name the planted person."""
    out = tmp_path_factory.mktemp("detector") / "detector"
    corpus = load_corpus(datasets.Dataset.from_list(annotated_records(users=8, notes=3)))
    settings = train_detector(corpus, out, model=tiny_encoder, settings=SETTINGS, progress=False)
    return out, settings


def test_a_tiny_detector_finds_the_name_it_was_taught(detector):
    out, settings = detector
    assert settings.types == ["NAME"] and settings.categories == {"NAME": "NAME"}
    assert 0.05 <= settings.threshold <= 0.5
    facts = settings.training
    assert facts["users"] == {"training": 6, "held_out": 2} and facts["documents"] == {"training": 18, "held_out": 6}
    card = (out / "README.md").read_text()
    assert "sensitive" in card and "Zabrowski" not in card and "Quirinus" not in card  # counts, never a name
    # in contexts it was taught, beside a decoy in another: the name's words are the cue, not the context. A hidden
    # size of 32 and 25 epochs found the name from some initialisations only (and in a new context from fewer); at 64
    # and 40 epochs every one of encoder seeds 0-3 finds it (and tags neither the decoy nor a filler word)
    text = "Wound clean and dry. Spoke to Quirinus Zabrowski about discharge. Visited by the chaplain this afternoon."
    (spans,) = list(load_ner(f"detector:{out}").spans([text]))
    found = " ".join(text[s.start:s.end] for s in spans)
    assert PLANTED in found and {s.label for s in spans} == {"NAME"}, found
    assert "chaplain" not in found and "discharge" not in found, found


def test_the_card_says_when_the_target_recall_was_not_reached(detector, tmp_path):
    _, settings = detector
    facts = settings.training

    def card(recall: float) -> str:
        write_card(tmp_path, replace(settings, threshold=0.05, training={**facts, "held_out": {**facts["held_out"],
                                                                                             "recall": recall}}))
        return (tmp_path / "README.md").read_text()

    assert "target recall was not reached" not in card(facts["target_recall"])  # reached exactly: nothing to say
    short = card(facts["target_recall"] - 0.02)
    assert "The target recall was not reached" in short and f"{facts['target_recall'] - 0.02:.4f}" in short


def test_folds_are_whole_users_each_held_out_once():
    users = [f"patient-{i}" for i in range(11) for _ in range(3)]  # 11 users, 3 notes each
    folds = user_folds(users, 3, seed=0, where="x")
    assert sorted(u for fold in folds for u in fold) == sorted(set(users))  # each user in exactly one fold
    assert sorted(len(fold) for fold in folds) == [3, 4, 4]
    assert folds == user_folds(list(reversed(users)), 3, seed=0, where="x")  # the order of records does not matter
    assert folds != user_folds(users, 3, seed=1, where="x")
    with pytest.raises(CorpusError, match="too few for 3 folds"):
        user_folds(users[:24], 3, seed=0, where="x")  # 8 users: a fold's training would lack held-out users


def test_labels_are_bio_tags_of_the_annotated_words(tiny_encoder):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_encoder)
    settings = DetectorSettings(["NAME"], {"NAME": "NAME"}, 0.5, max_length=16, stride=4)
    text = "Seen by Quirinus Zabrowski today, then by the team and again by the nurse on the ward."
    start = text.index(PLANTED)
    windows = labelled_windows(tokenizer, [text], [[Span(start, start + len(PLANTED), "NAME")]], settings)
    assert len(windows) > 1  # the text is longer than a window
    first = tokenizer.convert_ids_to_tokens(windows[0]["input_ids"])
    tags = [settings.tags[t] if t >= 0 else None for t in windows[0]["labels"]]
    tagged = [(token, tag) for token, tag in zip(first, tags) if tag not in ("O", None)]
    assert tagged[0][1] == "B-NAME" and all(tag == "I-NAME" for _, tag in tagged[1:])
    assert "".join(token.removeprefix("##") for token, _ in tagged) == "quirinuszabrowski"
    assert tags[0] is None and tags[first.index("[SEP]")] is None  # special tokens: no loss


def test_push_refuses_a_detector_directory(detector, tmp_path, capsys):
    out, _ = detector
    with pytest.raises(PPMLMError, match="trained detector"):
        push_run(out, "org/detector", local_dir=tmp_path / "export", force=True)
    with pytest.raises(PPMLMError, match="lies inside"):
        push_run(out / "nested", "org/detector", local_dir=tmp_path / "export", force=True)
    assert main(["push", str(out), "--repo-id", "org/detector", "--local-dir", str(tmp_path / "export"), "--force"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "never pushed" in error
    assert not (tmp_path / "export").exists()


@pytest.mark.parametrize("case", ["no_column", "malformed", "few_users", "out_taken", "bad_option"])
def test_bad_input_is_one_line_before_anything_is_written(case, tmp_path, capsys):
    records = annotated_records(users=4, notes=2)
    out = tmp_path / "out"
    expected = {"no_column": "no column 'gold'", "malformed": "record 1 (doc_id='u0-1'): column 'phi': span 0",
                "few_users": "cannot be split", "out_taken": "holds files that are not a ppmlm detector",
                "bad_option": "--stride"}[case]
    arguments = []
    if case == "no_column":
        arguments = ["--spans-from", "gold"]
    elif case == "malformed":
        records[1]["phi"] = [{"start": 3, "label": "NAME"}]
    elif case == "few_users":
        records = records[:4]  # 2 users
    elif case == "out_taken":
        out.mkdir()
        (out / "notes.txt").write_text("mine")
    else:
        arguments = ["--max-length", "16", "--stride", "12"]
    data = write_jsonl(records, tmp_path / "notes.jsonl") if case != "out_taken" else tmp_path / "missing.jsonl"
    assert main(["detector", "train", "--data", str(data), "--out", str(out), *arguments]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and expected in error, error
    assert "Zabrowski" not in error  # a span's fields are never shown
    assert (out / "notes.txt").read_text() == "mine" if case == "out_taken" else not out.exists()


def test_a_missing_or_foreign_detector_directory_is_one_error(tmp_path):
    with pytest.raises(NERError, match="no such directory"):
        load_ner(f"detector:{tmp_path / 'none'}")
    (tmp_path / "model").mkdir()
    with pytest.raises(NERError, match="not a detector directory"):
        load_ner(f"detector:{tmp_path / 'model'}")
    with pytest.raises(DetectorError, match="--folds"):
        from ppmlm.detector.evaluation import evaluate_detector

        evaluate_detector(None, folds=1)


@pytest.mark.slow
def test_detector_training_runs_under_accelerate_launch(two_ranks, tiny_encoder, tmp_path):
    data = write_jsonl(annotated_records(users=6, notes=2), tmp_path / "notes.jsonl")
    out = tmp_path / "detector"
    output = two_ranks.run(ROOT / "ppmlm" / "__main__.py", "detector", "train", "--data", data, "--out", out,
                           "--model", tiny_encoder, "--epochs", "2", "--max-length", "64", "--stride", "16")
    assert "2 process(es)" in output
    settings = DetectorSettings.load(out)
    assert settings.training["processes"] == 2 and (out / "model.safetensors").is_file()


def test_blacklist_command_runs_the_rules_and_the_detector(detector, tmp_path, capsys):
    out, _ = detector
    records = [{"user_id": f"u{i}", "doc_id": f"d{i}", "text": note["text"], "phi": note["phi"]}
               for i, note in enumerate(annotated_records(users=3, notes=1, seed=5))]
    data = write_jsonl(records, tmp_path / "notes.jsonl")
    assert main(["blacklist", "--data", str(data), "--out", str(tmp_path / "bl"), "--ner", f"default+detector:{out}"]) == 0
    stats = json.loads((tmp_path / "bl" / "stats.json").read_text())
    assert stats["parameters"]["ner"] == f"default+detector:{out}"
    assert stats["counts"]["spans_by_source"].get("detector", 0) + stats["counts"]["spans_by_source"].get(
        "default+detector", 0) >= 3  # the planted name, in every note
    assert stats["counts"]["gold_coverage"] == 1.0


def test_a_cached_blacklist_is_keyed_by_the_detector_it_was_built_with(detector, tmp_path):
    import shutil

    from ppmlm.identifiers.ner import ner_rules_digest

    out, _ = detector
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    union = ner_rules_digest(f"default+detector:{copy}")
    assert union not in (None, ner_rules_digest("default")) and union == ner_rules_digest(f"default+detector:{out}")
    settings = json.loads((copy / "detector.json").read_text())
    (copy / "detector.json").write_text(json.dumps(dict(settings, threshold=settings["threshold"] / 2)))
    assert ner_rules_digest(f"default+detector:{copy}") != union  # trained again, or its threshold edited


def test_a_fold_is_measured_for_the_rules_the_detector_and_their_union(detector):
    from ppmlm.detector.evaluation import SIDES, _pooled, measure_fold, table

    out, _ = detector
    held_out = load_corpus(datasets.Dataset.from_list(annotated_records(users=3, notes=1, seed=7)))
    counts = measure_fold(held_out, out, "phi", k=1, profile="balanced")
    blacklists = {side: counts[side]["blacklist"] for side in SIDES}
    assert blacklists["detector"]["covered"] == blacklists["detector"]["gold_words"] == 6  # the planted name, 3 notes
    assert blacklists["union"]["covered"] >= max(blacklists["rules"]["covered"], blacklists["detector"]["covered"])
    pooled = _pooled([{"fold": 1, "threshold": 0.5, **counts}])
    assert pooled["union"]["blacklist"]["coverage"] == 1.0 and pooled["union"]["blacklist"]["coverage_by_label"] == {
        "NAME": 1.0}
    assert "| default+detector | blacklist | 1.0000 |" in table(
        {"folds": 1, "users": 3, "documents": 3, "k": 1, "profile": "balanced", "pooled": pooled,
         "per_fold": [{"threshold": 0.5}]})
