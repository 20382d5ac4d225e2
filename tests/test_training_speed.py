"""The training speed options of docs/training.md on CPU and tiny models: gradient accumulation, mixed precision,
fused AdamW, torch.compile. No test assumes a GPU, or how many there are: each builds its accelerator on CPU."""
import json
import math
import re
from pathlib import Path

import pytest
import torch
from accelerate import Accelerator
from accelerate.state import AcceleratorState, GradientState
from conftest import TINY_MODEL, assert_float32_close, small_corpus
from transformers import AutoConfig, AutoModelForMaskedLM

from ppmlm.config import RunConfig
from ppmlm.corpus.clinical import generate_corpus
from ppmlm.errors import ConfigError
from ppmlm.features import build_features
from ppmlm.pipeline import compose_config, train
from ppmlm.training.loop import PlainTrainer
from ppmlm.training.objective import MaskedLMLoss
from ppmlm.training.optimizer import adamw, use_fused

ROOT = Path(__file__).resolve().parents[1]


def tiny_model(tokenizer):
    """Dropout off, so that two ways of computing one update can be compared."""
    config = AutoConfig.for_model("bert", vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=2, intermediate_size=64, max_position_embeddings=66,
                                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    return AutoModelForMaskedLM.from_config(config)


def train_config(*overrides):
    return RunConfig.from_config(compose_config(["train.epochs=1", *overrides])).train


def every_fourth_token(rows):
    """A masking collator without randomness: every fourth real token is a label, so that a batch gives the
    same labels whether collated whole or in parts (padding with id 0, BERT's [PAD])."""
    width = max(len(row["input_ids"]) for row in rows)
    input_ids = torch.zeros(len(rows), width, dtype=torch.long)
    attention_mask = torch.zeros_like(input_ids)
    for i, row in enumerate(rows):
        input_ids[i, : len(row["input_ids"])] = torch.tensor(row["input_ids"])
        attention_mask[i, : len(row["input_ids"])] = 1
    labels = torch.full_like(input_ids, -100)
    picked = (torch.arange(width) % 4 == 1) & (attention_mask == 1)
    labels[picked] = input_ids[picked]
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


@pytest.fixture(scope="module")
def eight_chunks(bert_tokenizer):
    return build_features(generate_corpus(2, seed=3), None, bert_tokenizer, max_length=32).select(range(8))


def one_update(tokenizer, features, batch_size, accumulation, **accelerator_options):
    """The gradient AdamW received and the weights after the first optimizer step of a PlainTrainer."""
    AcceleratorState._reset_state(reset_partial_state=True)  # each trainer its own accelerate settings
    GradientState._reset_state()
    accelerator = Accelerator(cpu=True, gradient_accumulation_steps=accumulation, **accelerator_options)
    settings = train_config(f"train.batch_size={batch_size}", f"train.gradient_accumulation_steps={accumulation}")
    trainer = PlainTrainer(settings, 0, tiny_model(tokenizer), features, every_fourth_token, accelerator)
    seen = []
    trainer.optimizer.optimizer.register_step_pre_hook(
        lambda optimizer, args, kwargs: seen.append([p.grad.clone() for p in trainer.objective.parameters()]))
    stats = next(iter(trainer.steps()))
    weights = [p.detach().clone() for p in trainer.objective.parameters()]
    return seen, weights, stats, trainer


# --- configuration ----------------------------------------------------------------------------------------

def test_defaults_train_as_before_and_good_values_are_kept():
    defaults = train_config()
    assert (defaults.gradient_accumulation_steps, defaults.mixed_precision, defaults.fused_optimizer, defaults.compile) \
        == (1, None, "auto", False)
    chosen = train_config("train.gradient_accumulation_steps=4", "train.mixed_precision=bf16",
                          "train.fused_optimizer=true", "train.compile=true")
    assert (chosen.gradient_accumulation_steps, chosen.mixed_precision, chosen.fused_optimizer, chosen.compile) \
        == (4, "bf16", True, True)


@pytest.mark.parametrize("setting, named", [
    ("train.gradient_accumulation_steps=2", "train.gradient_accumulation_steps=2: DP-SGD's logical batch is already "
                                            "train.batch_size, split into passes of train.dp.physical_batch_size"),
    ("train.mixed_precision=bf16", "train.mixed_precision=bf16: DP-SGD runs in full precision"),
    ("train.compile=true", "train.compile=true: Opacus's per-chunk hooks do not run under torch.compile"),
])
def test_dp_refuses_the_options_it_cannot_honour_in_one_line(setting, named):
    with pytest.raises(ConfigError) as error:
        train_config("train.dp.enabled=true", setting)
    assert str(error.value).startswith(named) and "\n" not in str(error.value)
    assert train_config("train.dp.enabled=true", "train.mixed_precision=no", "train.fused_optimizer=true").dp.enabled


def test_fused_adamw_resolves_as_documented(bert_tokenizer):
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert [use_fused(setting, cpu) for setting in ("auto", True, False)] == [False, True, False]
    assert [use_fused(setting, cuda) for setting in ("auto", True, False)] == [True, True, False]
    objective = MaskedLMLoss(tiny_model(bert_tokenizer))
    assert adamw(objective, train_config(), cpu).defaults["fused"] is None  # today's AdamW on CPU, unchanged
    fused = adamw(objective, train_config("train.fused_optimizer=true"), cpu)
    assert fused.defaults["fused"] is True
    for p in objective.parameters():
        p.grad = torch.ones_like(p)
    fused.step()  # torch has the fused kernel on CPU
    assert all(torch.isfinite(p).all() for p in objective.parameters())


# --- the options at work ----------------------------------------------------------------------------------

@pytest.mark.kernels
def test_gradient_accumulation_gives_the_update_of_one_big_batch(bert_tokenizer, eight_chunks):
    """Four batches of 2 accumulated make the same optimizer step as one batch of 8: the gradient (each
    micro-batch's mean divided by 4) and so the weights, up to float rounding and padding to other widths."""
    big_grads, big_weights, big_stats, big = one_update(bert_tokenizer, eight_chunks, batch_size=8, accumulation=1)
    small_grads, small_weights, small_stats, small = one_update(bert_tokenizer, eight_chunks, batch_size=2,
                                                                accumulation=4)
    assert len(big_grads) == len(small_grads) == 1  # one optimizer step each: the first three batches only accumulate
    assert big.steps_per_epoch == small.steps_per_epoch == 1
    floor = max(want.abs().max().item() for want in big_grads[0])
    for j, (want, got) in enumerate(zip(big_grads[0], small_grads[0])):
        assert_float32_close(got, want, want.abs(), floor, f"gradient of parameter {j}")
    for want, got in zip(big_weights, small_weights):
        assert torch.allclose(got, want, atol=1e-6)
    assert small_stats[3] == 4 and big_stats[3] == 1  # batches behind the step, for the metrics window
    assert int(small_stats[1]) == int(big_stats[1]) and int(small_stats[2]) == int(big_stats[2])


def test_bf16_autocast_trains_a_tiny_model_on_cpu(bert_tokenizer, eight_chunks):
    """bf16 runs the encoder's matrix products in bfloat16 (autocast, on CPU too) and keeps float32 weights;
    the loss stays finite and goes down over a few steps."""
    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
    accelerator = Accelerator(cpu=True, mixed_precision="bf16")
    trainer = PlainTrainer(train_config("train.batch_size=4", "train.lr=1e-3"), 0, tiny_model(bert_tokenizer),
                           eight_chunks, every_fourth_token, accelerator)
    dtypes = []
    layer = trainer.objective.model.base_model.encoder.layer[0].intermediate.dense
    layer.register_forward_hook(lambda module, inputs, output: dtypes.append(output.dtype))
    losses = []
    for _ in range(3):
        losses += [float(loss) for loss, *_ in trainer.steps()]
    assert set(dtypes) == {torch.bfloat16}
    assert all(p.dtype == torch.float32 for p in trainer.objective.parameters())
    assert all(math.isfinite(loss) for loss in losses) and losses[-1] < losses[0]


@pytest.mark.slow
def test_compiled_encoder_computes_the_eager_step(bert_tokenizer, eight_chunks):
    """torch.compile (inductor, C++ on CPU) on the encoder: the same loss and gradients as eager, and the
    checkpoint keeps the model's parameter names. About 30 s on one core, most of it compiling."""
    eager_grads, _, eager_stats, _ = one_update(bert_tokenizer, eight_chunks, batch_size=8, accumulation=1)
    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
    trainer = PlainTrainer(train_config("train.batch_size=8", "train.compile=true"), 0, tiny_model(bert_tokenizer),
                           eight_chunks, every_fourth_token, Accelerator(cpu=True))
    seen = []
    trainer.optimizer.optimizer.register_step_pre_hook(
        lambda optimizer, args, kwargs: seen.append([p.grad.clone() for p in trainer.objective.parameters()]))
    compiled_stats = next(iter(trainer.steps()))
    assert float(compiled_stats[0]) == pytest.approx(float(eager_stats[0]), rel=1e-5)
    for want, got in zip(eager_grads[0], seen[0]):
        assert torch.allclose(got, want, atol=1e-6, rtol=1e-3)
    names = set(trainer.accelerator.unwrap_model(trainer.objective).model.state_dict())
    assert names == set(tiny_model(bert_tokenizer).state_dict())


def test_the_loop_steps_the_schedule_once_per_optimizer_step(tmp_path, capsys):
    """End to end with accumulation over 3 batches, bf16 and fused AdamW: the epoch counts optimizer steps, and
    the linear schedule, counted in them too, ends at 0 on the last one."""
    run_dir = train(compose_config([TINY_MODEL, f"data.path={small_corpus()}", "train.max_length=64", "train.epochs=1",
                                    "blacklist.ner=none", "blacklist.spans_from=phi", "audit.enabled=false",
                                    f"blacklist.cache_dir={tmp_path / 'cache'}", f"output_dir={tmp_path / 'run'}",
                                    "train.batch_size=2", "train.gradient_accumulation_steps=3", "train.log_every=1",
                                    "train.mixed_precision=bf16", "train.fused_optimizer=true"]))
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    steps = [line for line in lines if "loss" in line]
    end = next(line for line in lines if line.get("event") == "epoch_end")
    chunks = int(re.search(r"(\d+) chunks of at most", capsys.readouterr().out).group(1))
    assert len(steps) == end["steps"] == math.ceil(math.ceil(chunks / 2) / 3) > 1
    assert steps[-1]["lr"] == 0.0 and steps[-2]["lr"] > 0
    assert all(math.isfinite(line["loss"]) for line in steps)
    assert end["precision"] == "bf16"


@pytest.mark.parametrize("key, used", [("null", "bf16"), ("no", "no")])
def test_the_mixed_precision_key_wins_over_the_launch_flag(tmp_path, monkeypatch, key, used):
    """`accelerate launch --mixed_precision bf16` reaches the run as ACCELERATE_MIXED_PRECISION: a null key
    leaves it in force, a set key replaces it; the epoch_end line says which precision the steps ran in."""
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", "bf16")
    run_dir = train(compose_config([TINY_MODEL, f"data.path={small_corpus()}", "train.max_length=64", "train.epochs=1",
                                    "blacklist.ner=none", "blacklist.spans_from=phi", "audit.enabled=false",
                                    f"blacklist.cache_dir={tmp_path / 'cache'}", f"output_dir={tmp_path / 'run'}",
                                    f"train.mixed_precision={key}"]))
    end = next(json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if "epoch_end" in line)
    assert end["precision"] == used


@pytest.mark.slow
def test_two_processes_accumulate_in_step(tmp_path, two_ranks):
    """`accelerate launch --multi_gpu --num_processes 2` (CPU, gloo) with accumulation over 3 batches and bf16:
    each rank steps once per 3 of its batches, and the ranks end with the same weights."""
    output = two_ranks.run(ROOT / "train.py", TINY_MODEL, f"data.path={small_corpus()}", "train.max_length=64", "train.epochs=1",
                  "blacklist.ner=none", "blacklist.spans_from=phi", "audit.enabled=false",
                  f"blacklist.cache_dir={tmp_path / 'cache'}", f"output_dir={tmp_path / 'run'}", "train.batch_size=2",
                  "train.gradient_accumulation_steps=3", "train.mixed_precision=bf16")
    end = next(json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
               if "epoch_end" in line)
    chunks = int(re.search(r"(\d+) chunks of at most", output).group(1))
    batches_per_rank = math.ceil(math.ceil(chunks / 2) / 2)  # accelerate deals whole batches of 2 to the ranks
    assert end["processes"] == 2 and end["precision"] == "bf16"
    assert end["steps"] == math.ceil(batches_per_rank / 3) > 1
    assert len(set(end["weight_checksums"])) == 1
