"""`train.packing`: whole chunks packed into rows of max_length tokens compute what the chunks compute alone (losses
and gradients), every chunk is trained once an epoch, and the runs that cannot pack say so in one line."""
import json
import math
import re
from pathlib import Path

import pytest
import torch
from accelerate import Accelerator
from conftest import TINY_MODEL, assert_float32_close, small_corpus
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoConfig, AutoModelForMaskedLM

from ppmlm.config import RunConfig
from ppmlm.corpus.clinical import generate_corpus
from ppmlm.errors import ConfigError, PPMLMError
from ppmlm.features import FEATURE_COLUMNS, build_features
from ppmlm.masking.collator import PrivacyMaskingCollator
from ppmlm.pipeline import compose_config, train
from ppmlm.training.loop import PlainTrainer
from ppmlm.training.objective import MaskedLMLoss
from ppmlm.training.packing import PackedRows, PackingCollator, pack_rows

ROOT = Path(__file__).resolve().parents[1]
RUN = [TINY_MODEL, f"data.path={small_corpus()}", "train.max_length=64", "train.epochs=1", "blacklist.ner=none",
       "blacklist.spans_from=phi", "audit.enabled=false", "train.packing=true"]


def tiny_model(tokenizer, model_type="bert", attention="sdpa"):
    """Dropout off, so that packed and unpacked passes can be compared."""
    extra = {"pad_token_id": tokenizer.pad_token_id} if model_type == "roberta" else {}
    config = AutoConfig.for_model(model_type, vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=2, intermediate_size=64, max_position_embeddings=72,
                                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                                  attn_implementation=attention, **extra)
    torch.manual_seed(0)
    return AutoModelForMaskedLM.from_config(config)


def chunks_of(tokenizer, max_length=64):
    """Chunks of very different lengths: whole notes of 3 patients cut at max_length, and their remainders."""
    return build_features(generate_corpus(3, seed=3), None, tokenizer, max_length=max_length).select_columns(
        list(FEATURE_COLUMNS))


# --- rows -------------------------------------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 64), min_size=1, max_size=300), st.randoms(use_true_random=False))
def test_every_chunk_lands_once_in_a_row_that_holds_it(lengths, random):
    order = list(range(len(lengths)))
    rows = pack_rows(lengths, 64, order)
    assert sorted(i for row in rows for i in row) == order
    assert all(sum(lengths[i] for i in row) <= 64 for row in rows)
    assert len(rows) >= math.ceil(sum(lengths) / 64)
    random.shuffle(order)
    assert len(pack_rows(lengths, 64, order)) == len(rows)  # the same number of steps whatever the shuffle


def test_best_fit_puts_each_chunk_where_it_fills_a_row_most():
    # longest first: 6 and 5 open two rows (2 and 3 free); 3 fills the second exactly, 2 the first
    assert pack_rows([2, 5, 6, 3], 8, [0, 1, 2, 3]) == [[2, 0], [1, 3]]
    with pytest.raises(ValueError, match="chunk 1 has 9 tokens, more than a row's 8"):
        pack_rows([1, 9], 8, [0, 1])


def test_each_epoch_repacks_from_its_own_shuffle(bert_tokenizer):
    chunks = chunks_of(bert_tokenizer)
    rows = PackedRows(chunks, 64, seed=7)
    first = [list(row) for row in rows.rows]
    rows.set_epoch(1)
    assert rows.rows != first and len(rows.rows) == len(first)
    rows.set_epoch(0)
    assert rows.rows == first  # seeded by (seed, epoch): a resumed run packs as an uninterrupted one
    assert sum(len(chunk["input_ids"]) for row in range(len(rows)) for chunk in rows[row]) == int(rows.lengths.sum())
    assert rows.fill > 0.9 and rows[0][0].keys() == set(FEATURE_COLUMNS)


# --- what a packed row computes --------------------------------------------------------------------------

@pytest.mark.kernels
@pytest.mark.parametrize("model_type, attention", [("bert", "sdpa"), ("bert", "eager"), ("roberta", "sdpa")])
def test_a_packed_row_computes_each_chunk_as_alone(bert_tokenizer, roberta_tokenizer, model_type, attention):
    """The same masked chunks, packed several to a row and unpacked: the same loss per chunk and the same
    gradients (block-diagonal attention, positions restarting per chunk: from 0 for BERT, from the padding id
    + 1 for RoBERTa), and the same labels (the masking is drawn per chunk before packing)."""
    tokenizer = bert_tokenizer if model_type == "bert" else roberta_tokenizer
    rows = PackedRows(chunks_of(tokenizer), 64, seed=0)
    batch = [rows[i] for i in range(len(rows)) if len(rows[i]) > 1][:3]
    assert sum(map(len, batch)) >= 6
    unpacked = PrivacyMaskingCollator(tokenizer, generator=torch.Generator().manual_seed(5))([c for r in batch for c in r])
    packed = PackingCollator(PrivacyMaskingCollator(tokenizer, generator=torch.Generator().manual_seed(5)))(batch)
    assert packed["input_ids"].shape[0] == 3 < unpacked["input_ids"].shape[0]
    assert sorted(packed["labels"][packed["labels"] != -100].tolist()) == sorted(
        unpacked["labels"][unpacked["labels"] != -100].tolist())

    losses, grads = [], []
    for inputs in (unpacked, packed):
        objective = MaskedLMLoss(tiny_model(tokenizer, model_type, attention))
        per_chunk = objective(**inputs)
        per_chunk.mean().backward()
        losses.append(per_chunk.detach())
        grads.append([p.grad for p in objective.parameters()])
    assert_float32_close(losses[1], losses[0], losses[0].abs(), losses[0].abs().max().item(), "loss per chunk")
    floor = max(want.abs().max().item() for want in grads[0])
    for j, (want, got) in enumerate(zip(*grads)):
        assert_float32_close(got, want, want.abs(), floor, f"gradient of parameter {j}")


def test_a_packed_batch_keeps_protected_tokens_out_of_the_labels(bert_tokenizer):
    """Every word of every other word id protected, every eligible word picked: labels land on the others only."""
    chunks = chunks_of(bert_tokenizer).map(lambda chunk: {"protected": [w >= 0 and w % 2 == 0 for w in chunk["word_ids"]]})
    rows = PackedRows(chunks, 64, seed=0)
    batch = [rows[i] for i in range(len(rows) - 8, len(rows))]
    packed = PackingCollator(PrivacyMaskingCollator(bert_tokenizer, mlm_probability=1.0,
                                                    generator=torch.Generator().manual_seed(0)))(batch)
    flat = [chunk for row in batch for chunk in row]
    text = packed["chunk_ids"] >= 0
    protected = torch.tensor([flat[c]["protected"][p] for c, p in zip(packed["chunk_ids"][text].tolist(),
                                                                      packed["position_ids"][text].tolist())])
    labelled = packed["labels"][text] != -100
    assert labelled.any() and not (labelled & protected).any()
    assert (labelled | protected).sum() > 0.6 * text.sum()  # the unprotected words were picked


# --- in a run ---------------------------------------------------------------------------------------------

def test_packing_is_refused_with_dp_in_one_line():
    with pytest.raises(ConfigError) as error:
        RunConfig.from_config(compose_config(["train.dp.enabled=true", "train.packing=true"]))
    assert str(error.value).startswith("train.packing=true: a packed row holds several chunks") and "\n" not in str(error.value)


def test_a_model_without_a_block_mask_is_refused_before_any_step(tmp_path):
    with pytest.raises(PPMLMError, match=r"train.packing=true: the model's attention implementation is 'flex_attention'"):
        train(compose_config([*RUN, "+model.config.attn_implementation=flex_attention",
                              f"blacklist.cache_dir={tmp_path / 'cache'}", f"output_dir={tmp_path / 'run'}"]))
    assert not (tmp_path / "run" / "metrics.jsonl").exists() or "loss" not in (tmp_path / "run" / "metrics.jsonl").read_text()


def test_the_trainer_repacks_every_epoch_and_trains_every_chunk_once(bert_tokenizer):
    chunks = chunks_of(bert_tokenizer)
    settings = RunConfig.from_config(compose_config(["train.packing=true", "train.max_length=64", "train.batch_size=4"])).train
    trainer = PlainTrainer(settings, 3, tiny_model(bert_tokenizer), chunks,
                           PrivacyMaskingCollator(bert_tokenizer, generator=torch.Generator()), Accelerator(cpu=True))
    packed = trainer.loader.dataset
    arrangements = []
    for epoch in range(2):
        trainer.set_epoch(epoch)
        arrangements.append([list(row) for row in packed.rows])
        seen = sum(int(batch["chunk_ids"].max()) + 1 for batch in trainer.loader)
        assert seen == len(chunks)
    assert arrangements[0] != arrangements[1] and len(arrangements[0]) == len(arrangements[1])
    assert trainer.steps_per_epoch == math.ceil(len(packed) / 4)


def test_a_packed_run_steps_over_rows(tmp_path, capsys):
    """An epoch is ceil(rows / batch_size) steps of batch_size rows; the losses are finite and the run says how
    full its rows are."""
    run_dir = train(compose_config([*RUN, f"blacklist.cache_dir={tmp_path / 'cache'}", f"output_dir={tmp_path / 'run'}",
                                    "train.batch_size=2", "train.log_every=1"]))
    out = capsys.readouterr().out
    chunks, rows = map(int, re.search(r"packing: (\d+) chunks in (\d+) rows of 64 tokens", out).groups())
    assert rows < chunks
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    end = next(line for line in lines if line.get("event") == "epoch_end")
    assert end["steps"] == math.ceil(rows / 2) == len([line for line in lines if "loss" in line])
    assert all(math.isfinite(line["loss"]) for line in lines if "loss" in line)


@pytest.mark.slow
def test_two_processes_train_packed_rows_in_step(tmp_path, two_ranks):
    """`accelerate launch --multi_gpu --num_processes 2` (CPU, gloo): both ranks pack the same rows each epoch and
    take whole batches of them in turn; they end each epoch with the same weights."""
    output = two_ranks.run(ROOT / "train.py", *RUN, "train.epochs=2", f"blacklist.cache_dir={tmp_path / 'cache'}",
                           f"output_dir={tmp_path / 'run'}", "train.batch_size=2")
    rows = int(re.search(r"packing: \d+ chunks in (\d+) rows", output).group(1))
    ends = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines() if "epoch_end" in line]
    assert [end["steps"] for end in ends] == [math.ceil(math.ceil(rows / 2) / 2)] * 2
    assert all(end["processes"] == 2 and len(set(end["weight_checksums"])) == 1 for end in ends)
