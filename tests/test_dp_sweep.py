"""bench/dp_sweep.py: the gradient norms behind C are those DP-SGD clips (per chunk and per user), its tuning users are
nobody else's; the DP recipes' defaults that come from it are valid settings."""
import sys
from pathlib import Path

import pytest
import torch
from conftest import FLOAT32_EPS, assert_float32_close
from transformers import AutoConfig, AutoModelForMaskedLM

from ppmlm.config import RunConfig
from ppmlm.corpus.clinical import generate_corpus
from ppmlm.corpus.domains import generate_synthetic
from ppmlm.corpus.loading import load_corpus
from ppmlm.features import build_features
from ppmlm.masking.collator import PrivacyMaskingCollator
from ppmlm.models import PUBLIC_SYNTH_SEED
from ppmlm.pipeline import compose_config
from ppmlm.training.dp.model import PerSampleMaskedLMLoss

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from dp_sweep import gradient_norms, quantiles, tuning_corpus  # noqa: E402


@pytest.mark.kernels
@pytest.mark.filterwarnings("ignore:Full backward hook is firing")
@pytest.mark.parametrize("parameters", ["all", "bias+norm"])
def test_gradient_norms_are_those_of_each_chunk_and_of_each_users_sum(parameters, bert_tokenizer):
    torch.manual_seed(0)
    config = AutoConfig.for_model("bert", vocab_size=len(bert_tokenizer), hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=2, intermediate_size=64, hidden_dropout_prob=0.0,
                                  attention_probs_dropout_prob=0.0)  # no dropout: the reference sees the same model
    model = AutoModelForMaskedLM.from_config(config)
    features = build_features(generate_corpus(3, seed=1), None, bert_tokenizer, max_length=32)
    features = features.select([i for i, user in enumerate(features["user_id"])
                                if features["user_id"][:i].count(user) < 3])  # 3 chunks per user
    collate = PrivacyMaskingCollator(bert_tokenizer, mlm_probability=0.3, generator=torch.Generator().manual_seed(2))
    norms = gradient_norms(model, features, collate, freeze_embeddings=True, per_user=2, batch=1, parameters=parameters)
    assert len(norms["chunk"]) == 6 and len(norms["user"]) == 3

    collate.generator.manual_seed(2)  # the same masks again, in the same order: reference by plain autograd
    rows = features.select_columns(["input_ids", "attention_mask", "word_ids", "protected"]).to_list()
    generator, users = torch.Generator().manual_seed(0), {}
    for index, user in enumerate(features["user_id"]):
        users.setdefault(user, []).append(index)
    objective = PerSampleMaskedLMLoss(model)
    params = [p for p in model.parameters() if p.requires_grad]  # what DP-SGD trains, as gradient_norms left them
    assert model.get_input_embeddings().weight.requires_grad is False
    if parameters == "all":
        assert len(params) == len(list(model.parameters())) - 1  # all but the word embeddings
    else:
        assert {n for n, p in model.named_parameters() if p.requires_grad} == {
            n for n, _ in model.named_parameters() if n.endswith("bias") or "LayerNorm" in n}
    chunk_norms, user_norms, user_sums = [], [], []
    for chunks in users.values():
        picked = [chunks[i] for i in torch.randperm(len(chunks), generator=generator)[:2].tolist()]
        total = None
        for index in picked:
            batch = collate([rows[index]])
            grads = torch.autograd.grad(objective(batch["input_ids"], batch["attention_mask"], batch["labels"]).sum(), params)
            flat = torch.cat([g.flatten() for g in grads])
            chunk_norms.append(flat.norm())
            total = flat if total is None else total + flat
        user_sums.append(total)
        user_norms.append(total.norm())
    directions = sum(total / total.norm() for total in user_sums)
    # a mean of unit vectors: each off by its sum's relative rounding (the tolerance below), at most twice over
    assert norms["agreement"] == pytest.approx(float(directions.norm()) / 3, rel=0, abs=2 * 4096 * FLOAT32_EPS)
    for got, want, what in ((norms["chunk"], chunk_norms, "chunk"), (norms["user"], user_norms, "user")):
        want = torch.stack(want)
        assert_float32_close(torch.tensor(got), want, want, float(want.max()), what)
    assert list(quantiles([1.0, 2.0, 3.0, 4.0, 5.0]).values()) == pytest.approx([1.4, 2.0, 3.0, 4.0, 4.6])


def test_tuning_corpus_shares_no_text_with_the_public_warm_start_or_synth(tmp_path):
    """The sweep tunes on users of its own reserved seed: neither the warm start's (-1) nor any run's (>= 0)."""
    tuned = {record["text"] for record in load_corpus(tuning_corpus(tmp_path / "tuning.jsonl", 6))}
    assert len(tuned) > 6
    for seed in (PUBLIC_SYNTH_SEED, 0):
        assert not tuned & {record["text"] for record in generate_synthetic("clinical", 6, seed=seed)}


@pytest.mark.parametrize("recipe, unit, batch", [("dp", "chunk", 256), ("dp-user", "user", 64)])
def test_dp_recipes_defaults_are_valid_large_batch_settings(recipe, unit, batch):
    cfg = RunConfig.from_config(compose_config([f"recipe={recipe}"]))
    dp = cfg.train.dp
    assert dp.enabled and dp.unit == unit and cfg.train.batch_size == batch
    assert dp.physical_batch_size < batch and dp.grad_sample_mode == "hooks"
    assert cfg.model.warm_start == "auto" and cfg.model.name_or_path is None  # the offline encoder: public warm start
