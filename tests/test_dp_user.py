"""User-level (patient-level) DP-SGD on tiny models: per-user clipping, user sampling, accounting against
published values, two processes, resume after a kill."""
import json
import math
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from conftest import TINY_MODEL, RankLauncher, assert_float32_close, small_corpus, train_killed_in_epoch_2
from opacus.accountants import PRVAccountant
from test_dp import (
    _Optimizer,
    capture_gradients,
    epoch_ends,
    per_sample_autograd,
    tiny_features,
    tiny_model,
    trainer_for,
)
from transformers import AutoModelForMaskedLM

from ppmlm.audit.checkpoint import dp_settings
from ppmlm.config import RunConfig
from ppmlm.errors import ConfigError
from ppmlm.features import FEATURE_COLUMNS
from ppmlm.pipeline import compose_config, train
from ppmlm.rundir import checkpoint_epsilon
from ppmlm.sharing.card import _dp_lines
from ppmlm.sharing.checkpoint import RunCheckpoint
from ppmlm.training.dp.accounting import PrivacyLedger
from ppmlm.training.dp.sampling import PoissonUserSampler, physical_batches

ROOT = Path(__file__).resolve().parents[1]


def user_trainer(tokenizer, model, features, *overrides, users_per_step=2, mlm_probability=0.15):
    return trainer_for(tokenizer, model, features, "train.dp.unit=user", *overrides, batch_size=users_per_step,
                       mlm_probability=mlm_probability)


def collated(collator, features, users, size):
    """One logical batch of `users` (chunk indices per user) as the trainer builds it, `size` chunks per pass."""
    table = features.select_columns(list(FEATURE_COLUMNS))
    return [(collator(table.select(chunks).to_list()), slots) for chunks, slots in physical_batches(users, size)]


def flat_norm(tensors) -> float:
    return torch.sqrt(sum((t.double() ** 2).sum() for t in tensors)).item()


# --- per-user clipping --------------------------------------------------------------------------------------

@pytest.mark.kernels
def test_each_user_sum_of_chunk_gradients_is_clipped_to_C_as_one_unit(bert_tokenizer):
    """With the noise off, a step applies sum over users of clip_C(sum of the user's chunk gradients) / expected
    users, checked against per-chunk autograd, with a user split across physical batches; and a user alone in
    a step moves the gradient by at most C / expected users, however many chunks they bring."""
    features = tiny_features(bert_tokenizer, users=3)
    model = tiny_model(bert_tokenizer)
    C = 1e-2
    trainer, collator = user_trainer(bert_tokenizer, model, features, f"train.dp.max_grad_norm={C}",
                                     "train.dp.noise_multiplier=1.0")
    trainer.optimizer.noise_multiplier = 0.0
    users = [[0, 1, 2], [3], [4, 5]]
    physical = collated(collator, features, users, size=2)  # [0 1 | 2 3 | 4 5]: the first user spans two passes
    assert [slots for _, slots in physical] == [[0, 0], [0, 1], [2, 2]]
    trainer.module.disable_hooks()
    per_chunk = [per_sample_autograd(trainer.objective.model, batch) for batch, _ in physical]
    trainer.module.enable_hooks()
    params = per_chunk[0][0]
    chunk_grads = [grads for _, batch_grads in per_chunk for grads in batch_grads]
    slot_of = [s for _, slots in physical for s in slots]
    sums = [[sum(chunk_grads[c][j] for c, s in enumerate(slot_of) if s == u) for j in range(len(params))]
            for u in range(len(users))]
    norms = [flat_norm(user) for user in sums]
    assert min(norms) > 3 * C  # every user is clipped
    factors = [min(1.0, C / (n + 1e-6)) / trainer.expected_batch for n in norms]
    expected = [sum(user[j] * f for user, f in zip(sums, factors)) for j in range(len(params))]
    magnitudes = [sum(chunk_grads[c][j].abs() * factors[s] for c, s in enumerate(slot_of)) for j in range(len(params))]
    floor = max(m.max().item() for m in magnitudes)
    seen = capture_gradients(trainer)
    trainer.user_step(physical)
    assert len(seen) == 1 and trainer.ledger.steps == 1  # one noisy step for the three passes
    for j, (got, want) in enumerate(zip(seen[0], expected)):
        assert_float32_close(got, want, magnitudes[j], floor, f"parameter {j}")

    trainer.user_step(collated(collator, features, [list(range(6))], size=2))  # one user, six chunks, three passes
    contribution = flat_norm(seen[-1]) * trainer.expected_batch
    assert contribution == pytest.approx(C, rel=1e-4)  # clipped once as a whole, not C per chunk or per pass
    assert trainer.ledger.steps == 2


@pytest.mark.parametrize("mode", ["ghost", "fast"])
def test_norm_only_clipping_cannot_group_users(mode):
    with pytest.raises(ConfigError, match="unit=user"):
        RunConfig.from_config(compose_config(["recipe=dp", "train.dp.unit=user", f"train.dp.grad_sample_mode={mode}"]))
    with pytest.raises(ConfigError, match="train.dp.unit=person"):
        RunConfig.from_config(compose_config(["recipe=dp", "train.dp.unit=person"]))


# --- the user sampler ---------------------------------------------------------------------------------------

def test_user_sampler_rate_and_independence():
    """Seeded statistical bounds over 1,000 steps of 300 users at q = 0.1 (about 5 standard deviations): the
    rate overall and per user, the batch-size variance of independent draws (N q (1 - q); a fixed-size sampler
    has none), no correlation between users or between a user's consecutive steps."""
    users, q, steps = 300, 0.1, 1000
    drawn = list(PoissonUserSampler([[u] for u in range(users)], q, steps, max_chunks=None, seed=11))
    assert len(drawn) == steps
    included = torch.zeros(steps, users)
    for step, batch in enumerate(drawn):
        included[step, [chunks[0] for chunks in batch]] = 1
    assert abs(included.mean().item() - q) < 5 * (q * (1 - q) / (users * steps)) ** 0.5
    assert ((included.mean(0) - q).abs() < 5 * (q * (1 - q) / steps) ** 0.5).all()
    sizes = included.sum(1)
    variance = users * q * (1 - q)
    assert abs(sizes.var().item() - variance) < 5 * variance * (2 / steps) ** 0.5
    between_users = torch.corrcoef(included.T)[~torch.eye(users, dtype=torch.bool)]
    assert abs(between_users.mean().item()) < 0.01 and between_users.abs().max() < 6 / steps ** 0.5
    lag = torch.stack([torch.corrcoef(torch.stack([included[:-1, u], included[1:, u]]))[0, 1] for u in range(users)])
    assert abs(lag.mean().item()) < 5 / (steps * users) ** 0.5

    chunks = list(range(100, 110))  # one user with 10 chunks, 3 drawn per step at random
    draws = [batch[0] for batch in PoissonUserSampler([chunks], 1.0, 2000, max_chunks=3, seed=5)]
    assert all(len(set(d)) == 3 and set(d) <= set(chunks) for d in draws)
    frequency = torch.bincount(torch.tensor([c - 100 for d in draws for c in d]), minlength=10) / len(draws)
    assert ((frequency - 0.3).abs() < 5 * (0.3 * 0.7 / len(draws)) ** 0.5).all()

    ranks = [list(PoissonUserSampler([[u] for u in range(50)], 0.2, 30, None, seed=3, rank=r, world_size=2))
             for r in (0, 1)]
    for mine, theirs in zip(*ranks):  # a user is sampled on one rank only
        assert not {c[0] for c in mine} & {c[0] for c in theirs}
    again = PoissonUserSampler([[u] for u in range(50)], 0.2, 30, None, seed=3, rank=0, world_size=2)
    assert list(again) == ranks[0]  # the same draws from (seed, epoch, rank): what resuming relies on
    again.set_epoch(1)
    assert list(again) != ranks[0]


# --- accounting ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("sigma, q, steps, delta, published", [
    # Opacus, opacus/tests/accountants_test.py: test_rdp_accountant (steps = int(90 / 0.04)) ...
    (1.5, 0.04, 2250, 1e-5, {"rdp": 7.32911117143}),
    # ... and test_prv_accountant (steps = int(90 // 0.04), one fewer)
    (1.5, 0.04, 2249, 1e-5, {"prv": 6.777395712150674}),
    # tensorflow-privacy, compute_dp_sgd_privacy_test.py: test_compute_dp_sgd_privacy Test0 and Test1
    # (n, batch, sigma, epochs, delta) = (60000, 150, 1.3, 15, 1e-5) and (100000, 100, 1.0, 30, 1e-7)
    (1.3, 150 / 60000, 15 * 60000 // 150, 1e-5, {"rdp": 0.7242234026109595}),
    (1.0, 100 / 100000, 30 * 100000 // 100, 1e-7, {"rdp": 1.4154988495444842}),
    # ... test_compute_dp_sgd_example_privacy, no microbatching, Poisson q = 0.01, 1.2 epochs (120 steps), sigma 0.7
    (0.7, 0.01, 120, 1e-5, {"rdp": 3.2392676}),
])
def test_epsilon_of_both_accountants_against_published_values(sigma, q, steps, delta, published):
    """The ledger behind epoch_end and privacy.json, fed one step at a time as training does, to 1e-3. Under
    unit=user q is the users' sampling rate: the arithmetic is the same, the unit is what changes."""
    ledger = PrivacyLedger(noise_multiplier=sigma, sample_rate=q)
    for _ in range(steps):
        ledger(_Optimizer(noise_multiplier=sigma))
    epsilon = ledger.epsilon(delta)
    for accountant, value in published.items():
        assert epsilon[accountant] == pytest.approx(value, abs=1e-3)


def test_prv_against_tensorflow_privacy_pld():
    """tensorflow-privacy's PLD accountant gives 2.4612381 for sigma 0.7, q 0.01, 120 steps, delta 1e-5
    (test_compute_dp_sgd_example_privacy). PRV agrees to 1e-3 at a fine discretization; the ledger's reported
    PRV epsilon is Opacus's upper estimate (eps_error 0.01), so it lies above by at most that much."""
    fine = PRVAccountant()
    fine.history = [(0.7, 0.01, 120)]
    assert fine.get_epsilon(1e-5, eps_error=3e-4) == pytest.approx(2.4612381, abs=1e-3)
    ledger = PrivacyLedger(noise_multiplier=0.7, sample_rate=0.01)
    for _ in range(120):
        ledger(_Optimizer(noise_multiplier=0.7))
    assert 0 <= ledger.epsilon(1e-5)["prv"] - 2.4612381 <= 0.01 + 1e-3


# --- the training loop: resume after a kill, privacy.json, card; two processes ------------------------------

def user_run(tmp_path, *extra):
    return [TINY_MODEL, f"data.path={small_corpus()}", "train.max_length=64", "blacklist.ner=none", "audit.enabled=false",
            "blacklist.spans_from=phi", f"blacklist.cache_dir={tmp_path / 'cache'}", "recipe=dp-user",
            "train.batch_size=2", "train.dp.max_chunks_per_user=3", "train.dp.physical_batch_size=2",
            "train.dp.noise_multiplier=0.8", "train.log_every=1", *extra]


def weights_of(checkpoint) -> dict:
    return AutoModelForMaskedLM.from_pretrained(checkpoint).state_dict()


def test_resume_after_a_kill_gives_the_same_epsilon_and_weights(tmp_path):
    """A user-level run killed with SIGKILL during epoch 2 and started again ends with the epsilon and the
    weights of the same run left alone: the ledger and the optimizer come back from the epoch-1 checkpoint, the
    user sampler, the chunk draws, the masking and the noise are reseeded from (seed, epoch, rank)."""
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    common = user_run(tmp_path, "train.epochs=2")
    train(compose_config([*common, f"output_dir={whole}"]))
    train_killed_in_epoch_2(killed, common)  # a process of its own; the other runs train here
    train(compose_config([*common, f"output_dir={killed}"]))

    want, got = epoch_ends(whole), epoch_ends(killed)
    assert [e["epoch"] for e in got] == [1, 2]
    assert got[-1]["epsilon"] == want[-1]["epsilon"] and got[-1]["privacy"]["steps"] == want[-1]["privacy"]["steps"]
    reference = weights_of(whole / "checkpoints" / "epoch-2")
    for name, tensor in weights_of(killed / "checkpoints" / "epoch-2").items():
        assert torch.equal(tensor, reference[name]), name

    privacy = json.loads((whole / "checkpoints" / "epoch-2" / "privacy.json").read_text())
    settings = privacy["privacy"]
    assert settings["unit"] == "user" and "group" not in settings
    assert settings["sample_rate"] == 2 / settings["users"] and settings["steps"] == 2 * math.ceil(settings["users"] / 2)
    assert settings["chunks_per_user"]["max_chunks_per_step"] == 3
    assert checkpoint_epsilon(whole / "checkpoints" / "epoch-2")["unit"] == "user"
    checkpoint = whole / "checkpoints" / "epoch-2"
    figures = {"dp": checkpoint_epsilon(checkpoint), "dp_settings": dp_settings(checkpoint)}  # as its audit signs them
    shared = RunCheckpoint(run_dir=whole, epoch=2, path=checkpoint, config={}, figures=figures, training_users=None,
                           weights={}, unverified=())
    card = "\n".join(_dp_lines(shared))
    assert "per training user" in card and "unit of privacy is a user" in card and "group" not in card


PROBE_THEN_TRAIN = textwrap.dedent('''
    """Two ranks, one user-level step each that gives zero gradient (rank 0: no user sampled, rank 1: a user
    whose chunks have no masked token): what the optimizer applies is the noise alone, added once. Then train.py
    in the same ranks and process group (one launch instead of two, as in test_dp). Arguments: the output file,
    the tests folder, then `--` and train.py's arguments."""
    import json, runpy, sys
    import torch
    from accelerate import Accelerator
    from transformers import AutoTokenizer
    sys.path.insert(0, sys.argv[2])
    from test_dp import tiny_model, tiny_features, capture_gradients
    from test_dp_user import user_trainer, collated
    from ppmlm.models import default_model_path
    from ppmlm.training.distributed import end_processes, nested_run

    out, tests, cut = sys.argv[1], sys.argv[2], sys.argv.index("--")
    accelerator = Accelerator(cpu=True)
    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    features = tiny_features(tokenizer)
    trainer, collator = user_trainer(tokenizer, tiny_model(tokenizer), features, "train.dp.noise_multiplier=0.7",
                                     "train.dp.max_grad_norm=2.0", users_per_step=2, mlm_probability=0.0)
    seen = capture_gradients(trainer)
    if accelerator.process_index == 0:
        trainer.physical_step(None)
    else:
        trainer.user_step(collated(collator, features, [[0, 1, 2]], size=2))
    flat = torch.cat([g.flatten() for g in seen[0]])
    ranks = accelerator.gather(flat.sum().reshape(1)).tolist()
    if accelerator.is_main_process:
        json.dump({"std": flat.std().item(), "rank_sums": ranks, "steps": trainer.ledger.steps,
                   "processes": accelerator.num_processes}, open(out, "w"))
    trainer.close()
    with nested_run():  # released, the group kept for the training, whose end destroys it
        end_processes(accelerator)
    del trainer, collator, seen, accelerator
    sys.argv = [f"{tests}/../train.py", *sys.argv[cut + 1 :]]
    runpy.run_path(sys.argv[0], run_name="__main__")
''')


@pytest.fixture(scope="module")
def two_process_launch(tmp_path_factory):
    """One `accelerate launch` with 2 CPU processes: the noise probe, then a user-level training run."""
    tmp = tmp_path_factory.mktemp("two_processes")
    launcher = RankLauncher(tmp)
    script, out, run_dir = tmp / "probe.py", tmp / "two.json", tmp / "run"
    script.write_text(PROBE_THEN_TRAIN)
    output = launcher.run(script, out, ROOT / "tests", "--", *user_run(tmp, "train.epochs=1", f"output_dir={run_dir}"))
    return SimpleNamespace(output=output, probe=json.loads(out.read_text()), run_dir=run_dir)


def test_two_processes_add_the_noise_once_per_user_step(two_process_launch):
    """Under `accelerate launch` with 2 CPU processes: the noise on the applied gradient has std sigma*C/expected
    users, as in one process."""
    two = two_process_launch.probe
    assert two["processes"] == 2 and two["steps"] == 1
    assert two["rank_sums"][0] == two["rank_sums"][1]
    assert two["std"] == pytest.approx(0.7 * 2.0 / 2, rel=0.03)


def test_two_processes_train_in_step_and_account_per_user(two_process_launch):
    """The training loop keeps the ranks in step (uneven users and physical batches per rank) and accounts with
    q = expected users / training users, as one process would."""
    end = epoch_ends(two_process_launch.run_dir)[-1]
    assert end["processes"] == 2 and len(set(end["weight_checksums"])) == 1
    privacy = end["privacy"]
    assert privacy["unit"] == "user" and privacy["sample_rate"] == 2 / privacy["users"] and privacy["steps"] == end["steps"]
    one_process = PrivacyLedger(0.8, privacy["sample_rate"])
    for _ in range(privacy["steps"]):
        one_process(_Optimizer(noise_multiplier=0.8))
    assert end["epsilon"] == pytest.approx(one_process.epsilon(1e-5), rel=1e-9)  # BLAS threads: see test_dp
