"""`recipe=classify`: the paper's downstream protocol on tiny models (frozen encoder but its top layer, warm-up
then linear decay, macro F1 and accuracy), label handling and the medical abstracts when ../shared is there."""
import json
import math
from pathlib import Path

import pandas as pd
import pytest
import torch
from omegaconf import OmegaConf
from safetensors.torch import load_file
from sklearn.metrics import accuracy_score, f1_score
from transformers import AutoConfig, AutoModelForMaskedLM, AutoModelForSequenceClassification

from ppmlm.audit.metrics import load_metric
from ppmlm.cli import main
from ppmlm.corpus.clinical import generate_corpus
from ppmlm.downstream.classify import class_order, freeze_all_but_top, source_name
from ppmlm.errors import PPMLMError
from ppmlm.pipeline import train_from_overrides

ROOT = Path(__file__).resolve().parents[1]
MEDICAL = ROOT.parent / "shared" / "data" / "medical_abstracts"
TINY = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}
TINY_OVERRIDE = ("+model.config={model_type: bert, hidden_size: 32, num_hidden_layers: 2, num_attention_heads: 2, "
                 "intermediate_size: 64}")


def overrides(*extra):
    return ["recipe=classify", "data.synth_users=6", "classify.max_length=32", "classify.batch_size=4",
            "classify.epochs=2", *extra]


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory, bert_tokenizer):
    """A masked-LM checkpoint as training writes it (weights and tokenizer), tiny."""
    torch.manual_seed(0)
    directory = tmp_path_factory.mktemp("runs") / "mlm" / "checkpoints" / "epoch-1"
    config = AutoConfig.for_model("bert", vocab_size=len(bert_tokenizer), **TINY)
    AutoModelForMaskedLM.from_config(config).save_pretrained(directory)
    bert_tokenizer.save_pretrained(directory)
    return directory


@pytest.mark.slow
def test_classifier_from_a_checkpoint_trains_only_its_top_and_follows_the_schedule(tmp_path, tiny_checkpoint):
    run_dir = tmp_path / "run"
    assert main(["train", *overrides(f"model.name_or_path={tiny_checkpoint}", f"output_dir={run_dir}",
                                     "classify.log_every=1", "classify.head_lr=1e-3")]) == 0

    results = json.loads((run_dir / "results.json").read_text())
    # The classes the 6 patients' notes have: a draw of the corpus (seed 42's lack respiratory notes).
    assert results["labels"] == sorted({record["label"] for record in generate_corpus(6, seed=42)})
    assert results["split"]["by"] == "users" and results["split"]["train"]["users"] == 5
    assert results["split"]["eval"]["users"] == 1
    assert [e["epoch"] for e in results["epochs"]] == [1, 2] and results["final"] == results["epochs"][-1]
    for figures in results["epochs"]:
        assert 0 <= figures["macro_f1"] <= 1 and 0 <= figures["accuracy"] <= 1
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [record["epoch"] for record in lines if record.get("event") == "eval"] == [1, 2]
    assert "task: classify" in (run_dir / "config.yaml").read_text()

    # Warm-up from 0 to 2e-5 over the first 10% of the steps, then linear decay to 0 (lr after each step).
    lrs = [record["lr"] for record in lines if "lr" in record]
    total, warmup = results["protocol"]["steps"], results["protocol"]["warmup_steps"]
    assert len(lrs) == total and warmup == math.ceil(0.1 * total) >= 2
    expected = [2e-5 * (s / warmup if s < warmup else (total - s) / (total - warmup)) for s in range(1, total + 1)]
    assert lrs == pytest.approx(expected, abs=1e-12)
    assert max(lrs) == pytest.approx(2e-5) and lrs.index(max(lrs)) + 1 == warmup and lrs[-1] == 0
    assert [record["head_lr"] for record in lines if "lr" in record] == pytest.approx([50 * lr for lr in lrs], abs=1e-12)

    # Only the last encoder layer and the head changed; everything below is bit-identical to the checkpoint.
    before = load_file(str(tiny_checkpoint / "model.safetensors"))
    after = load_file(str(run_dir / "model" / "model.safetensors"))
    frozen = [name for name in after if name.startswith(("bert.embeddings.", "bert.encoder.layer.0."))]
    top = [name for name in after if name.startswith("bert.encoder.layer.1.")]
    assert frozen and top and any(name.startswith("classifier.") for name in after)
    assert all(torch.equal(before[name], after[name]) for name in frozen)
    assert all(not torch.equal(before[name], after[name]) for name in top)

    classifier = AutoModelForSequenceClassification.from_pretrained(run_dir / "model")
    assert classifier.config.id2label == dict(enumerate(results["labels"]))


@pytest.mark.slow
def test_two_processes_train_the_classifier_and_end_their_process_group(tmp_path, tiny_checkpoint, two_ranks):
    """Under `accelerate launch --multi_gpu --num_processes 2` on CPU both ranks train, evaluate on the whole
    held-out split and exit, the DDP-wrapped classifier released before the process group ends."""
    run_dir = tmp_path / "run"
    output = two_ranks.run(ROOT / "train.py", *overrides(f"model.name_or_path={tiny_checkpoint}", f"output_dir={run_dir}"))
    assert two_ranks.gloo_threads_left() == ["", ""] and "still referenced" not in output
    results = json.loads((run_dir / "results.json").read_text())
    assert [e["epoch"] for e in results["epochs"]] == [1, 2] and 0 <= results["final"]["macro_f1"] <= 1


@pytest.mark.parametrize("model_type", ["bert", "roberta"])
def test_only_the_top_layer_and_the_head_get_gradients(model_type):
    config = AutoConfig.for_model(model_type, vocab_size=100, num_labels=3, **TINY)
    model = AutoModelForSequenceClassification.from_config(config)
    top, head = freeze_all_but_top(model, layers=1)
    model(input_ids=torch.randint(5, 100, (2, 12)), labels=torch.tensor([0, 2])).loss.backward()
    graded = {name for name, p in model.named_parameters() if p.grad is not None}
    allowed = (f"{model_type}.encoder.layer.1.", f"{model_type}.pooler.", "classifier.")
    assert graded and all(name.startswith(allowed) for name in graded)
    assert graded == {name for name, p in model.named_parameters() if p.requires_grad}
    assert {id(p) for p in top + head} == {id(p) for name, p in model.named_parameters() if name in graded}
    assert all(name.startswith(allowed[1:]) for name, p in model.named_parameters() if any(p is q for q in head))
    assert any(name.startswith(f"{model_type}.encoder.layer.1.") for name in graded)
    with pytest.raises(PPMLMError, match="has 2 layers"):
        freeze_all_but_top(model, layers=3)


def test_metric_modules_match_scikit_learn():
    references = [0, 0, 1, 1, 2, 2, 2, 3, 3, 4]
    predictions = [0, 1, 1, 1, 2, 0, 2, 3, 1, 1]  # class 4 never predicted
    f1 = load_metric("f1_macro").compute(predictions=predictions, references=references)["macro_f1"]
    accuracy = load_metric("accuracy").compute(predictions=predictions, references=references)["accuracy"]
    assert f1 == pytest.approx(f1_score(references, predictions, average="macro"), abs=1e-12)
    assert accuracy == pytest.approx(accuracy_score(references, predictions), abs=1e-12)


def test_labels_are_ordered_deterministically_and_runs_are_named_after_their_checkpoint():
    assert class_order(["10", "2", "1", "2"]) == ["1", "2", "10"]
    assert class_order(["b", "a", "10", "2"]) == ["10", "2", "a", "b"]
    def model(name_or_path=None, config=None):
        return OmegaConf.create({"name_or_path": name_or_path, "config": config})

    assert source_name(model("runs/ppmlm/checkpoints/epoch-3")) == "ppmlm-epoch-3"
    assert source_name(model()) == "base" and source_name(model(config={"model_type": "bert"})) == "scratch"


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.parametrize("column, bad, message", [
    ("label", None, r"notes.jsonl: record 2 \(doc_id='d2'\): column 'label' is null or empty"),
    ("label", "  ", r"record 2 \(doc_id='d2'\): column 'label' is null or empty"),
    ("diagnosis", "x", r"notes.jsonl: no label column 'diagnosis' \(columns: text, user_id, doc_id, label\)"),
])
def test_bad_labels_stop_the_run_with_one_clear_error(tmp_path, column, bad, message):
    records = [{"doc_id": f"d{i}", "user_id": f"u{i % 3}", "text": f"note {i} about the heart",
                "label": "a" if i % 2 else "b"} for i in range(6)]
    records[2]["label"] = bad
    path = write_jsonl(tmp_path / "notes.jsonl", records)
    with pytest.raises(PPMLMError, match=message):
        train_from_overrides(overrides(TINY_OVERRIDE, f"data.path={path}", f"classify.label_column={column}",
                                       f"output_dir={tmp_path / 'run'}"))
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
@pytest.mark.skipif(not (MEDICAL / "medical_tc_test.csv").exists(), reason="needs ../shared/data/medical_abstracts")
def test_medical_abstracts_split_by_document_with_named_classes(tmp_path):
    sample = tmp_path / "abstracts.csv"
    pd.read_csv(MEDICAL / "medical_tc_test.csv", nrows=40).to_csv(sample, index=False)
    run_dir = train_from_overrides(overrides(
        TINY_OVERRIDE, f"data.path={sample}", "data.text_column=medical_abstract", "data.user_column=null",
        "classify.label_column=condition_label", f"classify.label_names={MEDICAL / 'medical_tc_labels.csv'}",
        "classify.epochs=1", f"output_dir={tmp_path / 'run'}"))
    results = json.loads((run_dir / "results.json").read_text())
    names = list(pd.read_csv(MEDICAL / "medical_tc_labels.csv")["condition_name"])
    assert results["split"]["by"] == "documents" and "users" not in results["split"]["train"]
    assert results["split"]["train"]["documents"] + results["split"]["eval"]["documents"] == 40
    assert results["labels"] == [name for name in names if name in results["labels"]] and len(results["labels"]) >= 2
    assert sum(results["split"]["eval"]["classes"].values()) == results["split"]["eval"]["documents"] == 8
