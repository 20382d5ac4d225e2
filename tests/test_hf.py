"""ppmlm inside a Hugging Face Trainer (ppmlm.hf, examples/hf_trainer.py): a Trainer run never labels a protected
token, writes the run directory and the audit files of ppmlm's own loop (epoch JSONs of the same form), ends with the
verdict, is exported by `ppmlm push --local-dir`, stops on a failing audit when asked; what a Trainer cannot do as the
recipe says is refused up front."""
import contextlib
import io
import json
import runpy
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from conftest import TINY_MODEL, small_corpus

from ppmlm.audit.policy import Check, SharingPolicy
from ppmlm.cli import main
from ppmlm.errors import ConfigError
from ppmlm.masking.collator import IGNORE_INDEX, PrivacyMaskingCollator

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "hf_trainer.py"


def overrides(tmp: Path, *extra) -> list[str]:
    return [f"data.path={small_corpus()}", "blacklist.ner=none", "blacklist.spans_from=phi",
            f"blacklist.cache_dir={tmp / 'cache'}", f"audit.reference={tmp / 'reference'}", "audit.max_users_per_side=3",
            "audit.maskings=4", "++audit.progress=false", *extra]


def tiny_reference(tmp: Path) -> None:
    """A separately initialized tiny model as the audit's reference, so that every attack has figures."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer, BertConfig

    from ppmlm.models import default_model_path

    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    torch.manual_seed(5)
    AutoModelForMaskedLM.from_config(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2,
                                                num_attention_heads=2, intermediate_size=64)).save_pretrained(tmp / "reference")
    tokenizer.save_pretrained(tmp / "reference")


def run_example(argv: list[str]) -> tuple[Path, list, str]:
    """examples/hf_trainer.py in this process: its run directory, every (features, batch) its collator made, and what
    it printed."""
    batches = []
    collate = PrivacyMaskingCollator.__call__

    def recording(self, features):
        batch = collate(self, features)
        batches.append((features, batch))
        return batch

    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(printed):
        patch.setattr(PrivacyMaskingCollator, "__call__", recording)
        run = runpy.run_path(str(EXAMPLE), run_name="hf_trainer")["main"](argv)
    return run, batches, printed.getvalue()


@pytest.fixture(scope="module")
def trainer_run(tmp_path_factory):
    """One epoch of the example with a tiny model on the small corpus, and the loop's run of the same settings."""
    from ppmlm.pipeline import compose_config, train

    tmp = tmp_path_factory.mktemp("hf")
    tiny_reference(tmp)
    run, batches, printed = run_example(["--tiny", *overrides(tmp, f"output_dir={tmp / 'trainer-run'}")])
    loop = train(compose_config([TINY_MODEL, "train.max_length=64", "train.epochs=1",
                                 *overrides(tmp, f"output_dir={tmp / 'loop-run'}")]))
    return SimpleNamespace(tmp=tmp, run=run, batches=batches, printed=printed, loop=loop)


@pytest.mark.slow
def test_a_trainer_run_never_labels_a_protected_token(trainer_run):
    labelled = protected = 0
    for features, batch in trainer_run.batches:
        flags = torch.zeros_like(batch["labels"], dtype=torch.bool)
        for row, feature in enumerate(features):
            flags[row, : len(feature["protected"])] = torch.tensor(feature["protected"])
        assert (batch["labels"][flags] == IGNORE_INDEX).all()
        labelled += int((batch["labels"] != IGNORE_INDEX).sum())
        protected += int(flags.sum())
    assert trainer_run.batches and labelled > 0 and protected > 0  # the Trainer masked, and there was something to spare


def form(value):
    """The shape of a JSON value: keys of objects all the way down, lists and scalars by kind."""
    if isinstance(value, dict):
        return {key: form(item) for key, item in value.items()}
    return "list" if isinstance(value, list) else "null" if value is None else type(value).__name__


@pytest.mark.slow
def test_the_run_directory_and_its_audit_are_those_of_the_loop(trainer_run):
    run, loop = trainer_run.run, trainer_run.loop
    for name in ("config.yaml", "split.json", "blacklist.json", "checkpoints/epoch-1/complete",
                 "checkpoints/epoch-1/model.safetensors", "audit/report.html", "audit/scores-epoch-1-samples.jsonl",
                 "audit/scores-epoch-1-users.jsonl", "audit/.salt"):
        assert (run / name).is_file() and (loop / name).is_file(), name
    ours, theirs = (json.loads((path / "audit" / "epoch-1.json").read_text()) for path in (run, loop))
    assert form(ours) == form(theirs)
    assert {key: ours["measured"][key] for key in ("split", "blacklist")} == {
        key: theirs["measured"][key] for key in ("split", "blacklist")}
    recorded = (run / "config.yaml").read_text()  # the Trainer's own settings, as the model card will state them
    assert "epochs: 1" in recorded and "head_lr: null" in recorded and "max_grad_norm: 1.0" in recorded


@pytest.mark.slow
def test_the_trainer_run_ends_with_the_verdict(trainer_run):
    lines = trainer_run.printed.strip().splitlines()
    audit = next(line for line in lines if line.startswith("audit epoch 1: utility "))
    assert "TPR at 1% FPR not resolved (needs ≥ 100 non-members)" in audit and " [0." in audit  # intervals
    verdict = lines.index(next(line for line in lines if line.startswith("verdict on epoch 1: ")))
    assert lines[verdict].startswith("verdict on epoch 1: inconclusive: 2 non-members resolve no TPR at 1% FPR (needs ≥ 100)")
    assert lines[verdict + 1] == "to resolve it:" and all(line.startswith("  - ") for line in lines[verdict + 2:])
    assert any("audit.lend_population" in line for line in lines[verdict + 2:])


@pytest.mark.slow
def test_push_exports_the_trainer_run(trainer_run, tmp_path, capsys):
    out = tmp_path / "export"
    assert main(["push", str(trainer_run.run), "--repo-id", "org/tiny-trainer", "--local-dir", str(out),
                 "--min-privacy-score", "none", "--max-tpr", "none"]) == 0
    assert "sharing policy: passed" in capsys.readouterr().out  # verified: signature and digests hold
    assert {p.name for p in out.iterdir()} == {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                                               "README.md"}
    assert "Not verified" not in (out / "README.md").read_text()


@pytest.mark.slow
def test_a_failing_audit_stops_the_trainer_when_asked(trainer_run, monkeypatch):
    failing = Check("loss TPR at 1% FPR (user)", 0.5, 0.1, at_least=False, interval=(0.4, 0.6))
    monkeypatch.setattr(SharingPolicy, "check", lambda self, figures: [failing])
    run, _, printed = run_example(["--tiny", "--epochs", "2", "--stop-on-failure",
                                   *overrides(trainer_run.tmp, f"output_dir={trainer_run.tmp / 'stopped'}")])
    assert "stopping after epoch 1: the sharing policy fails it (loss TPR at 1% FPR (user) 0.5 > 0.1" in printed
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["epoch-1"]
    assert not (run / "audit" / "epoch-2.json").exists()
    assert "verdict on epoch 1: failed: " in printed


@pytest.mark.parametrize("argument, value, message", [
    ("remove_unused_columns", True, "drops the word_ids and protected columns"),
    ("num_train_epochs", 1.5, "ppmlm audits whole epochs"),
    ("max_steps", 3, "ppmlm audits whole epochs"),
])
def test_trainer_arguments_the_run_cannot_honour_are_refused_before_anything(tmp_path, argument, value, message):
    from transformers import TrainingArguments

    from ppmlm.hf import prepare_trainer_run
    from ppmlm.pipeline import compose_config

    arguments = TrainingArguments(output_dir=str(tmp_path / "trainer"), report_to=[],
                                  **{"remove_unused_columns": False, argument: value})
    with pytest.raises(ConfigError, match=message):
        prepare_trainer_run(compose_config([f"data.path={tmp_path / 'none.jsonl'}", f"output_dir={tmp_path / 'run'}"]), None,
                            arguments)
    assert not (tmp_path / "run").exists()


def test_dp_sgd_is_refused_for_a_trainer_run(tmp_path):
    from transformers import TrainingArguments

    from ppmlm.hf import prepare_trainer_run
    from ppmlm.pipeline import compose_config

    arguments = TrainingArguments(output_dir=str(tmp_path / "trainer"), report_to=[], remove_unused_columns=False)
    cfg = compose_config([f"data.path={tmp_path / 'none.jsonl'}", f"output_dir={tmp_path / 'run'}", "train.dp.enabled=true"])
    with pytest.raises(ConfigError, match="train.dp.enabled=true: the Trainer clips no chunk's gradient"):
        prepare_trainer_run(cfg, None, arguments)
    assert not (tmp_path / "run").exists()


def test_the_collator_names_the_columns_a_trainer_dropped(bert_tokenizer):
    with pytest.raises(Exception, match="no word_ids and no protected column.*remove_unused_columns=False"):
        PrivacyMaskingCollator(bert_tokenizer)([{"input_ids": [101, 102], "attention_mask": [1, 1]}])
