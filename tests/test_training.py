"""Training end to end on tiny models: every recipe, resume after a real kill, two processes."""
import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from accelerate import PartialState
from accelerate.utils.other import clean_state_dict_for_safetensors
from conftest import TINY_MODEL, small_corpus, train_killed_in_epoch_2
from safetensors.torch import load_file, save_file
from transformers import BertConfig, BertForMaskedLM, BertModel

from ppmlm.identifiers.blacklist import Blacklist
from ppmlm.identifiers.ner import Span
from ppmlm.masking.variants import VARIANTS, protected_view, pseudonymize
from ppmlm.pipeline import compose_config, train
from ppmlm.training.loop import load_model, tied_weights_saved_quietly

ROOT = Path(__file__).resolve().parents[1]


def overrides(tmp_path, *extra):
    return [TINY_MODEL, f"data.path={small_corpus()}", "train.max_length=64", "train.epochs=1", "blacklist.ner=none",
            "blacklist.spans_from=phi", f"blacklist.cache_dir={tmp_path / 'cache'}", "audit.enabled=false", *extra]


def test_pseudonymize_and_protected_views():
    text = "Mr. Quill saw Dr. Ode today."
    spans = [Span(4, 9, "NAME"), Span(18, 21, "NAME")]
    assert pseudonymize(text, spans) == "Mr. X saw Dr. X today."
    assert pseudonymize(text, spans, "category") == "Mr. [NAME] saw Dr. [NAME] today."
    blacklist = Blacklist.from_terms(["gout"], spans={"d": spans})
    blacklist.terms["Quill"] = type(blacklist.terms["gout"])("Quill", 1, "direct", 1, 1, ["NAME"])
    assert protected_view(blacklist, VARIANTS["mlm"]) is None
    assert set(protected_view(blacklist, VARIANTS["dppmlm"]).terms) == {"Quill"}
    assert protected_view(blacklist, VARIANTS["ippmlm"]).spans == {}
    assert set(protected_view(blacklist, VARIANTS["ppmlm"]).terms) == {"Quill", "gout"}


@pytest.mark.slow
@pytest.mark.parametrize("recipe", ["mlm", "mlma", "ppmlm", "dppmlm", "ippmlm"])
def test_every_recipe_trains_and_checkpoints(tmp_path, recipe):
    run_dir = train(compose_config(overrides(tmp_path, f"recipe={recipe}", f"output_dir={tmp_path / recipe}")))
    checkpoint = run_dir / "checkpoints" / "epoch-1"
    assert (checkpoint / "model.safetensors").exists() and (checkpoint / "tokenizer.json").exists()
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    steps = [record for record in lines if "loss" in record]
    assert steps and all({"loss", "lr", "masked_tokens", "tokens_per_s"} <= set(step) for step in steps)
    assert json.loads((run_dir / "split.json").read_text())["members"]
    assert f"variant: {recipe}" in (run_dir / "config.yaml").read_text()


@pytest.mark.slow
def test_training_audits_every_epoch_against_a_population_reference(tmp_path, capsys):
    cfg = compose_config(overrides(tmp_path, "train.epochs=2", "audit.enabled=true", "audit.max_users_per_side=3",
                                   f"audit.reference_cache_dir={tmp_path / 'references'}", f"output_dir={tmp_path / 'run'}"))
    capsys.readouterr()
    run_dir = train(cfg)
    lines = capsys.readouterr().out.strip().splitlines()  # the run ends with the report's verdict, why, and what would resolve it
    verdict = max(i for i, line in enumerate(lines) if line.startswith("verdict on epoch 2: inconclusive: "))
    assert "non-members resolve no TPR at 1% FPR (needs ≥ 100)" in lines[verdict]
    assert lines[verdict + 1] == "to resolve it:" and len(lines) > verdict + 2
    assert all(line.startswith("  - ") for line in lines[verdict + 2:]) and "audit.lend_population" in "".join(lines[verdict:])
    epoch_line = next(line for line in lines if line.startswith("audit epoch 2: utility "))
    assert "TPR at 1% FPR not resolved (needs ≥ 100 non-members)" in epoch_line and "AUC loss 0." in epoch_line
    audits = sorted((run_dir / "audit").glob("epoch-*.json"))
    assert [p.name for p in audits] == ["epoch-1.json", "epoch-2.json"]
    figures = json.loads(audits[-1].read_text())
    assert 0 <= figures["privacy"]["score"] <= 1 and "likelihood_ratio" in json.dumps(figures)
    assert (run_dir / "audit" / "report.html").exists()
    assert list((tmp_path / "references").glob("*/checkpoints/epoch-2/complete"))  # trained once, cached


def test_corpus_by_path(tmp_path):
    from ppmlm.corpus.clinical import generate_corpus
    from ppmlm.corpus.engine import write_jsonl

    records = [{"note": r["text"], "patient": r["user_id"], "id": r["doc_id"]} for r in generate_corpus(8, seed=1)]
    write_jsonl(records, tmp_path / "notes.jsonl")
    cfg = compose_config(overrides(tmp_path, "blacklist.spans_from=null", f"data.path={tmp_path / 'notes.jsonl'}",
                                   "data.text_column=note", "data.user_column=patient", "data.doc_id_column=id",
                                   f"output_dir={tmp_path / 'run'}"))
    assert (train(cfg) / "checkpoints" / "epoch-1" / "complete").exists()


def weights(run_dir, epoch=2):
    return load_file(str(Path(run_dir) / "checkpoints" / f"epoch-{epoch}" / "model.safetensors"))


@pytest.mark.slow
def test_killed_run_resumes_to_the_same_weights(tmp_path, capsys):
    """The run killed at its first step of epoch 2 is a process of its own; the uninterrupted run and the resumed one
    train here, on the same single thread."""
    two_epochs = overrides(tmp_path, "train.epochs=2", "train.batch_size=2")
    train(compose_config([*two_epochs, f"output_dir={tmp_path / 'straight'}"]))
    train_killed_in_epoch_2(tmp_path / "killed", two_epochs)
    capsys.readouterr()
    train(compose_config([*two_epochs, f"output_dir={tmp_path / 'killed'}"]))
    assert "resuming after epoch 1" in capsys.readouterr().out
    expected, got = weights(tmp_path / "straight"), weights(tmp_path / "killed")
    assert expected.keys() == got.keys()
    differences = {name: (got[name] - expected[name]).abs().max().item() for name in expected}
    assert max(differences.values()) <= 1e-6, sorted(differences.items(), key=lambda kv: -kv[1])[:5]


@pytest.mark.slow
def test_two_processes_split_data_and_keep_identical_weights(tmp_path, two_ranks):
    train(compose_config(overrides(tmp_path, "train.batch_size=2", f"output_dir={tmp_path / 'one'}")))
    # with the audit: its reference model trains on 2 processes inside the run, which must keep its group
    output = two_ranks.run(ROOT / "train.py", *overrides(
        tmp_path, "train.batch_size=2", f"output_dir={tmp_path / 'two'}", "audit.enabled=true",
        "audit.max_users_per_side=3", f"audit.reference_cache_dir={tmp_path / 'references'}"))
    assert two_ranks.gloo_threads_left() == ["", ""]  # DDP's process group really ended, before the exit
    assert "still referenced" not in output  # and in end_processes, not whenever DDP was freed
    assert (tmp_path / "two" / "audit" / "epoch-1.json").exists()

    def ends(d):
        return [json.loads(line) for line in (d / "metrics.jsonl").read_text().splitlines() if '"epoch_end"' in line]

    one, two = ends(tmp_path / "one")[-1], ends(tmp_path / "two")[-1]
    assert two["processes"] == 2 and one["processes"] == 1
    assert two["steps"] * 2 >= one["steps"] >= two["steps"] * 2 - 1  # each rank sees half the batches
    assert len(set(two["weight_checksums"])) == 1  # every rank holds the same weights


def test_parameters_missing_from_the_checkpoint_learn_at_head_lr(tmp_path, bert_tokenizer):
    """A checkpoint saved without its MLM head (like the offline warm start) gets a fresh head: those
    parameters, and only those, form the `train.head_lr` group; with head_lr null there is one group."""
    from transformers import AutoConfig, BertModel

    from ppmlm.training.loop import load_model
    from ppmlm.training.objective import MaskedLMLoss, parameter_groups

    config = AutoConfig.for_model("bert", hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                  intermediate_size=64, vocab_size=len(bert_tokenizer))
    BertModel(config).save_pretrained(tmp_path / "encoder")  # an encoder without an MLM head
    cfg = compose_config([f"model.name_or_path={tmp_path / 'encoder'}", "train.lr=1e-4", "train.head_lr=3e-3"])
    objective = MaskedLMLoss(load_model(cfg.model, bert_tokenizer))
    body, head = parameter_groups(objective, cfg.train)
    names = {id(p): n for n, p in objective.model.named_parameters()}
    assert (body["lr"], head["lr"]) == (1e-4, 3e-3)
    assert {names[id(p)] for p in head["params"]} and all(names[id(p)].startswith("cls.") for p in head["params"])
    assert len(body["params"]) + len(head["params"]) == len(list(objective.model.parameters()))
    cfg.train.head_lr = None
    assert len(parameter_groups(objective, cfg.train)) == 1


def test_the_tied_heads_save_notice_alone_is_dropped(caplog):
    """accelerate warns of every shared tensor it leaves out of a saved state; the MLM head's weights tied by the model
    class are expected (the warning came on every epoch of every run), any other shared tensor is still reported."""
    PartialState()  # accelerate's logger needs its state, as in a run
    model = BertForMaskedLM(BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
                                       intermediate_size=8))
    state = {f"model.{name}": tensor for name, tensor in model.state_dict().items()}
    shared = torch.zeros(3)
    with caplog.at_level("WARNING", logger="accelerate.utils.other"):
        with tied_weights_saved_quietly(model):
            kept = clean_state_dict_for_safetensors(dict(state))
            assert "model.cls.predictions.decoder.weight" not in kept  # accelerate still leaves the tied copy out
            assert not [r for r in caplog.records if "Removed shared tensor" in r.getMessage()]
            clean_state_dict_for_safetensors({"model.a": shared, "model.b": shared})
    assert [r for r in caplog.records if "Removed shared tensor" in r.getMessage() and "model.b" in r.getMessage()]
    caplog.clear()
    with caplog.at_level("WARNING", logger="accelerate.utils.other"):
        clean_state_dict_for_safetensors(dict(state))  # outside the block, accelerate's warning is untouched
    assert [r for r in caplog.records if "Removed shared tensor" in r.getMessage()]


def test_an_encoder_loads_for_masked_lm_without_transformers_load_report(tmp_path):
    """The offline encoder has no MLM head: transformers reported it MISSING and the checkpoint "corrupted" on every
    run. The head is expected to be new; an encoder weight left out of a checkpoint is still said, by ppmlm."""
    config = BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1, num_attention_heads=1, intermediate_size=8)
    BertModel(config).save_pretrained(tmp_path / "encoder")
    reported = []  # transformers logs through its own handler, which does not propagate: listen on its logger
    listener = logging.Handler(level=logging.WARNING)
    listener.emit = lambda record: reported.append(record.getMessage())
    logging.getLogger("transformers").addHandler(listener)
    try:
        model = load_model(SimpleNamespace(config=None, name_or_path=str(tmp_path / "encoder")), tokenizer=None)
    finally:
        logging.getLogger("transformers").removeHandler(listener)
    assert {"cls.predictions.bias", "cls.predictions.transform.dense.weight"} <= model.ppmlm_fresh_parameters
    assert not [message for message in reported if "MISSING" in message or "corrupted" in message], reported

    weights = load_file(tmp_path / "encoder" / "model.safetensors")
    del weights["encoder.layer.0.attention.self.query.weight"]
    (tmp_path / "partial").mkdir()
    save_file(weights, tmp_path / "partial" / "model.safetensors", metadata={"format": "pt"})
    config.save_pretrained(tmp_path / "partial")
    with pytest.warns(UserWarning, match=r"1 encoder weights are not in the checkpoint.*bert\.encoder\.layer\.0\.attention"):
        load_model(SimpleNamespace(config=None, name_or_path=str(tmp_path / "partial")), tokenizer=None)
