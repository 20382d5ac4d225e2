"""The public warm start (model.warm_start): trained once on public text and cached by content, never on the run's
corpus, taken by default by DP runs whose checkpoint lacks its MLM head, and recorded by the audit and the card."""
import csv
import json
from contextlib import nullcontext
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from conftest import TINY_MODEL, small_corpus
from transformers import AutoTokenizer, BertConfig, BertModel

from ppmlm.config import RunConfig
from ppmlm.corpus.domains import generate_synthetic
from ppmlm.corpus.loading import load_corpus
from ppmlm.errors import ConfigError, PPMLMError
from ppmlm.masking.collator import IGNORE_INDEX, PrivacyMaskingCollator
from ppmlm.models import PUBLIC_SYNTH_SEED, default_model_path
from ppmlm.pipeline import compose_config
from ppmlm.training import warm_start
from ppmlm.training.loop import load_model
from ppmlm.words import WordSegmenter

PLANTED = "Zyxwv Planted-Secret-Phrase 90210 was admitted"
TINY_PUBLIC = ["model.public.synth_users=2", "model.public.layers=1", "model.public.batch_size=16", "train.max_length=64"]


def write_abstracts(path: Path, texts: list[str]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["condition_label", "medical_abstract"])
        writer.writerows([[1, text] for text in texts])
    return path


def public_abstracts(count: int, offset: int = 0) -> list[str]:
    return [f"Abstract {i}: the trial enrolled {i + 10} adults with chronic heart failure; dyspnea improved after "
            "diuretic therapy and the ejection fraction rose at six months." for i in range(offset, offset + count)]


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(default_model_path())


def config(tmp_path: Path, *overrides: str) -> RunConfig:
    return RunConfig.from_config(compose_config([TINY_MODEL, f"data.path={small_corpus()}", *TINY_PUBLIC,
                                                 f"model.public.cache_dir={tmp_path / 'warm'}", *overrides]))


def accelerator():
    """What the warm start asks of the run's accelerator, for one process."""
    return SimpleNamespace(is_main_process=True, device=torch.device("cpu"), print=print, main_process_first=nullcontext)


def test_built_once_and_cached_by_content(tmp_path, tokenizer, capsys, monkeypatch):
    abstracts = write_abstracts(tmp_path / "abstracts.csv", public_abstracts(12))
    corpus = load_corpus(small_corpus())
    cfg = config(tmp_path, "model.warm_start=public", f"model.public.abstracts={abstracts}")
    torch.manual_seed(0)
    model, record = warm_start.public_warm_start(cfg, load_model(cfg.model, tokenizer), tokenizer, corpus, accelerator())
    assert "warm start: training" in capsys.readouterr().out
    synthetic = len(generate_synthetic("clinical", 2, seed=PUBLIC_SYNTH_SEED))
    assert {s["source"]: s["documents"] for s in record["sources"]} == {"medical abstracts": 12, "synthetic clinical": synthetic}
    assert record["sources"][1]["seed"] == PUBLIC_SYNTH_SEED < 0
    assert model.ppmlm_fresh_parameters == frozenset()  # its head is trained: the run trains it at train.lr
    [entry] = [p for p in (tmp_path / "warm").iterdir() if not p.name.startswith(".")]

    def no_training(*args, **kwargs):
        raise AssertionError("a cached warm start was trained again")

    monkeypatch.setattr(warm_start, "train_warm_start", no_training)
    torch.manual_seed(0)
    again, same = warm_start.public_warm_start(cfg, load_model(cfg.model, tokenizer), tokenizer, corpus, accelerator())
    assert f"warm start: reusing {entry}" in capsys.readouterr().out and same == record
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))
    monkeypatch.undo()

    more = write_abstracts(tmp_path / "more.csv", public_abstracts(13))  # another public source: another warm start
    other = config(tmp_path, "model.warm_start=public", f"model.public.abstracts={more}")
    torch.manual_seed(0)
    warm_start.public_warm_start(other, load_model(other.model, tokenizer), tokenizer, corpus, accelerator())
    assert len([p for p in (tmp_path / "warm").iterdir() if not p.name.startswith(".")]) == 2


def test_one_warm_start_for_every_run_seed(tmp_path, tokenizer, monkeypatch):
    """From a checkpoint without an MLM head, each run seed draws another fresh head at load; the warm start starts
    from its own draw, so runs of any seed share one entry."""
    torch.manual_seed(3)
    BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64)).save_pretrained(tmp_path / "headless")
    tokenizer.save_pretrained(tmp_path / "headless")
    abstracts = write_abstracts(tmp_path / "abstracts.csv", public_abstracts(12))
    cfg = RunConfig.from_config(compose_config([
        f"model.name_or_path={tmp_path / 'headless'}", f"data.path={small_corpus()}", *TINY_PUBLIC,
        "model.warm_start=public", f"model.public.abstracts={abstracts}", f"model.public.cache_dir={tmp_path / 'warm'}"]))
    corpus = load_corpus(small_corpus())
    torch.manual_seed(42)
    first, record = warm_start.public_warm_start(cfg, load_model(cfg.model, tokenizer), tokenizer, corpus, accelerator())
    monkeypatch.setattr(warm_start, "train_warm_start", lambda *a, **k: pytest.fail("trained again for another seed"))
    torch.manual_seed(43)
    loaded = load_model(cfg.model, tokenizer)
    assert loaded.ppmlm_fresh_parameters  # the head is missing from the checkpoint: drawn from the run's seed
    again, same = warm_start.public_warm_start(cfg, loaded, tokenizer, corpus, accelerator())
    assert same == record
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), again.state_dict().values()))


def test_never_trains_on_the_run_corpus(tmp_path, tokenizer, monkeypatch):
    """A document of the run's corpus that is also public text (here one with a planted phrase, whichever role its
    user has) is left out of the warm start, and no text of the run reaches its features."""
    records = [json.loads(line) for line in small_corpus().read_text().splitlines()]
    records[3]["text"] = PLANTED + " " + records[3]["text"]
    run_path = tmp_path / "run.jsonl"
    run_path.write_text("".join(json.dumps(r) + "\n" for r in records))
    corpus = load_corpus(run_path)
    abstracts = write_abstracts(tmp_path / "abstracts.csv", public_abstracts(6) + ["  " + records[3]["text"] + "\n"])
    cfg = config(tmp_path, f"data.path={run_path}", "model.warm_start=public", f"model.public.abstracts={abstracts}")
    seen = []
    build = warm_start.build_features
    monkeypatch.setattr(warm_start, "build_features", lambda docs, *a, **k: seen.extend(d["text"] for d in docs) or build(
        docs, *a, **k))
    _, record = warm_start.public_warm_start(cfg, load_model(cfg.model, tokenizer), tokenizer, corpus, accelerator())
    assert seen and not any(PLANTED in text for text in seen)
    assert not set(seen) & set(corpus["text"])
    assert record["sources"][0] == {"source": "medical abstracts", "file": "abstracts.csv", "documents": 6,
                                    "left_out_as_in_run_corpus": 1}
    assert PLANTED not in json.dumps(record)


def test_synthetic_identifiers_are_context_never_targets(tmp_path, tokenizer, monkeypatch):
    """The generator draws names and places from the same lists for public and private users: the warm start sees its
    synthetic users' gold spans as context but is never asked to predict a word of one, so that it cannot teach the
    run's model the run's patients' names before any private step. Abstracts hold no spans: every word is eligible."""
    abstracts = write_abstracts(tmp_path / "abstracts.csv", public_abstracts(4))
    cfg = config(tmp_path, "model.warm_start=public", f"model.public.abstracts={abstracts}")
    built = []
    build = warm_start.build_features

    def recorded(docs, identifiers, *args, **kwargs):
        built.append((docs, build(docs, identifiers, *args, **kwargs)))
        return built[-1][1]

    monkeypatch.setattr(warm_start, "build_features", recorded)
    _, record = warm_start.public_warm_start(cfg, load_model(cfg.model, tokenizer), tokenizer, load_corpus(small_corpus()),
                                             accelerator())
    gold = {r["text"]: r["phi"] for r in generate_synthetic("clinical", 2, seed=PUBLIC_SYNTH_SEED)}
    assert record["identifier_spans_never_targets"] == sum(map(len, gold.values())) > 0
    assert record["sources"][1]["identifier_spans_never_targets"] == record["identifier_spans_never_targets"]
    assert "identifier_spans_never_targets" not in record["sources"][0]
    segmenter, checked = WordSegmenter(), {"gold": 0, "other": 0}
    for docs, features in built:
        texts = {d["doc_id"]: d["text"] for d in docs}
        for row in features.to_list():
            text = texts[row["doc_id"]]
            words = next(segmenter.pipe([text]))
            spans = gold.get(text, [])
            first, stop = words.overlapping([s["start"] for s in spans], [s["end"] for s in spans])
            in_span = {w for a, b in zip(first, stop) for w in range(a, b)}
            for word, protected in zip(row["word_ids"], row["protected"]):
                if word >= 0:
                    is_gold = row["word_offset"] + word in in_span
                    assert protected == is_gold, (row["doc_id"], word)
                    checked["gold" if is_gold else "other"] += 1
        collate = PrivacyMaskingCollator(tokenizer, mlm_probability=0.5, generator=torch.Generator().manual_seed(0))
        batch = collate(features.select_columns(["input_ids", "attention_mask", "word_ids", "protected"]).to_list())
        for labels, protected in zip(batch["labels"], features["protected"]):
            assert (labels[: len(protected)][torch.tensor(protected)] == IGNORE_INDEX).all()
    assert checked["gold"] > 0 and checked["other"] > checked["gold"]


def test_dp_recipes_take_it_by_default_and_the_settings_are_checked(tmp_path):
    fresh = SimpleNamespace(ppmlm_fresh_parameters=frozenset({"cls.predictions.bias"}))
    trained = SimpleNamespace(ppmlm_fresh_parameters=frozenset())
    for recipe, expected in (("dp", True), ("dp-user", True), ("mlm", False), ("ppmlm", False)):
        cfg = RunConfig.from_config(compose_config([f"recipe={recipe}"]))
        assert cfg.model.warm_start == "auto"
        assert warm_start.wanted(cfg.model, cfg.train.dp.enabled, fresh) is expected, recipe
        assert not warm_start.wanted(cfg.model, cfg.train.dp.enabled, trained)  # a checkpoint with its own head
    cfg = RunConfig.from_config(compose_config(["recipe=ppmlm", "train.dp.enabled=true"]))
    assert warm_start.wanted(cfg.model, True, fresh)
    cfg = RunConfig.from_config(compose_config(["recipe=mlm", "model.warm_start=public"]))
    assert warm_start.wanted(cfg.model, False, trained)
    with pytest.raises(ConfigError, match=r"model.public.synth_domains=\['medical'\]: medical is not a synthetic domain"):
        RunConfig.from_config(compose_config(["model.public.synth_domains=[medical]"]))
    with pytest.raises(ConfigError, match="model.warm_start=public: model.public names no public text"):
        RunConfig.from_config(compose_config(["model.warm_start=public", "model.public.abstracts=null",
                                              "model.public.synth_users=0"]))
    cfg = config(tmp_path, "model.warm_start=public", "model.public.abstracts=/no/such.csv", "model.public.synth_users=0")
    with pytest.raises(PPMLMError, match="no public text to train on.*medical abstracts: /no/such.csv not found"):
        warm_start.public_warm_start(cfg, None, None, {"text": []}, accelerator())


@pytest.fixture(scope="module")
def dp_run(tmp_path_factory, tokenizer):
    """recipe=dp from a tiny checkpoint without an MLM head (as the offline encoder is), warm start left at its default,
    one epoch, audited."""
    from ppmlm.pipeline import train

    tmp = tmp_path_factory.mktemp("warm-dp")
    torch.manual_seed(3)
    BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64)).save_pretrained(tmp / "headless")
    tokenizer.save_pretrained(tmp / "headless")
    abstracts = write_abstracts(tmp / "abstracts.csv", public_abstracts(60))
    run = train(compose_config([
        "recipe=dp", f"model.name_or_path={tmp / 'headless'}", f"data.path={small_corpus()}", *TINY_PUBLIC,
        f"model.public.abstracts={abstracts}", f"model.public.cache_dir={tmp / 'warm'}", "train.epochs=1",
        "train.batch_size=8", "blacklist.ner=none", f"blacklist.cache_dir={tmp / 'cache'}", "audit.reference=none",
        "audit.max_users_per_side=3", "audit.maskings=4", "audit.inversion.enabled=false", "++audit.progress=false",
        f"output_dir={tmp / 'run'}"]))
    return SimpleNamespace(tmp=tmp, run=Path(run))


def test_dp_run_records_what_its_warm_start_saw_in_audit_report_and_card(dp_run):
    from ppmlm.sharing import SharingPolicy, push_run

    checkpoint = dp_run.run / "checkpoints" / "epoch-1"
    record = json.loads((checkpoint / "warm_start.json").read_text())
    assert [s["source"] for s in record["sources"]] == ["medical abstracts", "synthetic clinical"]
    figures = json.loads((dp_run.run / "audit" / "epoch-1.json").read_text())
    assert figures["warm_start"]["sources"] == record["sources"]
    assert figures["warm_start"]["text_digest"] == record["text_digest"] and "settings" not in figures["warm_start"]
    assert "Public warm start" in (dp_run.run / "audit" / "report.html").read_text()
    lenient = SharingPolicy(min_privacy_score=0.0, max_tpr_at_1pct_fpr={})
    push_run(dp_run.run, "org/tiny-dp", local_dir=dp_run.tmp / "export", policy=lenient, force=True)
    card = (dp_run.tmp / "export" / "README.md").read_text()
    line = next(line for line in card.splitlines() if line.startswith("| public warm start |"))
    synthetic = len(generate_synthetic("clinical", 2, seed=PUBLIC_SYNTH_SEED))
    assert f"medical abstracts: 60 documents; synthetic clinical: {synthetic} documents" in line
    assert "never on the training corpus" in line and "Abstract 1:" not in card
    assert "Not verified" not in card and "Verified by `ppmlm push`" in card  # the signed audit still verifies
