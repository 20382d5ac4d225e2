"""Cost of DP-SGD: steps/s and peak memory of private training against non-private training, same model,
same batches.

Every side trains its own copy of the same initial model on the same pre-collated batches (masking is not
timed), as `ppmlm.training.loop` does per step:

- non-private: `MaskedLMLoss` (masked-only head) and AdamW prepared by `accelerate`, backward, optimizer and
  schedule steps, `zero_grad`;
- DP hooks: `PrivateTrainer.physical_step` at the DP defaults (`recipe=dp`: the word embeddings, tied to the
  output projection, frozen): per-sample gradients by Opacus hooks through `PerSampleMaskedLMLoss`, clipping of
  each chunk to C, Gaussian noise, AdamW, schedule step. Each batch is one logical batch (the loop's Poisson
  batches vary in size; here every side sees the same ones);
- DP user: user-level DP-SGD (`train.dp.unit=user`) through `PrivateTrainer.user_step` on the same batches,
  each read as `--users-per-step` users of equally many chunks: the same chunks and tokens per step as DP hooks,
  plus the per-user sums of the per-chunk gradients before clipping (which user a chunk came from does not
  change the work);
- DP fast: Opacus's fast gradient clipping (`train.dp.grad_sample_mode=fast`), the full model with its tied
  embeddings trained: each layer's per-sample gradients give their norms and are freed at once, then a second
  backward pass of the loss reweighted by each chunk's clipping factor gives the clipped sum;
- unless `--defaults-only`: DP hooks with the word embeddings trained (`train.dp.freeze_embeddings=false`), the
  non-private step with them frozen, and DP ghost clipping, which needs them frozen or untied: it computes
  per-sample gradient norms without materializing the per-sample gradients, then a second backward pass.

Sides run in blocks of `--steps` steps, in rotating order, `--repeats` times, after a warm-up step each;
figures are medians. Peak memory is what two steps (the first allocates the optimizer state) add at their
peak to the memory held before them (model, batches): the CUDA allocator's peak, or on CPU the peak resident
set of a fresh process that builds that side alone (in one process, memory freed by one side is reused by
the next). The default sequence length is the product's (512): the per-sample work of DP-SGD grows with the
number of parameters, not with the tokens, so shorter sequences make the ratio worse (`--max-length 128`).

    python bench/dp.py [--tiny] [--batch-size 8] [--users-per-step 4] [--max-length 512] [--steps 3] [--repeats 3]
                       [--defaults-only]

The last lines are `dp_slowdown_<mode>: X` for each clipping mode (non-private steps/s of the full model / DP
steps/s: `hooks` at the DP defaults, `fast` with the embeddings trained; unless `--defaults-only`,
`hooks_trained` with them trained and `ghost_frozen` against non-private with the same frozen embeddings), then
`dp_user_slowdown: X` (DP hooks steps/s / DP user steps/s: user-level against chunk-level DP at the same chunks,
so the same expected tokens, per step). On a GPU, `--batch-size` sized to the card is the
physical batch of every side (issue 16's target: `dp_slowdown` <= 1.6 at the same logical batch).
"""
from __future__ import annotations

import argparse
import copy
import os
import resource
import statistics
import subprocess
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from accelerate import Accelerator  # noqa: E402
from transformers import AutoModelForMaskedLM, AutoTokenizer, BertConfig, get_linear_schedule_with_warmup, logging  # noqa: E402

from ppmlm.config import RunConfig  # noqa: E402
from ppmlm.corpus.clinical import generate_corpus  # noqa: E402
from ppmlm.features import FEATURE_COLUMNS, build_features  # noqa: E402
from ppmlm.masking.collator import PrivacyMaskingCollator  # noqa: E402
from ppmlm.models import default_model_path  # noqa: E402
from ppmlm.pipeline import compose_config  # noqa: E402
from ppmlm.training.dp.trainer import PrivateTrainer  # noqa: E402
from ppmlm.training.objective import MaskedLMLoss  # noqa: E402


def make_features(tokenizer, n_rows: int, max_length: int, users: int):
    features = build_features(generate_corpus(users, seed=0), None, tokenizer, max_length=max_length)
    if len(features) < n_rows:
        raise SystemExit(f"{users} synthetic users give {len(features)} chunks, fewer than {n_rows}: raise --users")
    return features.shuffle(seed=0).select(range(n_rows))


def make_model(tiny: bool, tokenizer):
    if tiny:
        config = BertConfig(vocab_size=len(tokenizer), hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=128, max_position_embeddings=512)
        return AutoModelForMaskedLM.from_config(config)
    return AutoModelForMaskedLM.from_pretrained(default_model_path())


def freeze_embeddings(model):
    model.get_input_embeddings().weight.requires_grad_(False)
    return model


def plain_step(accelerator, model, total_steps: int, args):
    objective = MaskedLMLoss(model)
    optimizer = torch.optim.AdamW([p for p in objective.parameters() if p.requires_grad], lr=1e-4, weight_decay=0.0)
    objective, optimizer = accelerator.prepare(objective, optimizer)
    scheduler = get_linear_schedule_with_warmup(optimizer, 0, total_steps)
    objective.train()

    def step(batch):
        loss = objective(batch["input_ids"], batch["attention_mask"], batch["labels"]).mean()
        accelerator.backward(loss)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()

    return step


def dp_step(accelerator, model, total_steps: int, args, features, collator, mode: str, frozen: bool | None = None):
    """`frozen` None: the recipe's own choice for the word embeddings."""
    cfg = RunConfig.from_config(compose_config(["recipe=dp", f"train.batch_size={args.batch_size}",
                                                "train.dp.noise_multiplier=1.0", f"train.dp.grad_sample_mode={mode}",
                                                *([] if frozen is None else [f"train.dp.freeze_embeddings={frozen}"])]))
    trainer = PrivateTrainer(cfg.train, cfg.seed, model, features, collator, accelerator)
    scheduler = get_linear_schedule_with_warmup(trainer.optimizer, 0, total_steps)
    trainer.objective.train()

    def step(batch):
        trainer.physical_step(batch)
        scheduler.step()

    return step


def dp_user_step(accelerator, model, total_steps: int, args, features, collator):
    """User-level DP on the same batches: each batch's chunks read as `--users-per-step` users of equal size."""
    cfg = RunConfig.from_config(compose_config(["recipe=dp", "train.dp.unit=user", f"train.batch_size={args.users_per_step}",
                                                "train.dp.noise_multiplier=1.0",
                                                f"train.dp.physical_batch_size={args.batch_size}"]))
    trainer = PrivateTrainer(cfg.train, cfg.seed, model, features, collator, accelerator)
    scheduler = get_linear_schedule_with_warmup(trainer.optimizer, 0, total_steps)
    trainer.objective.train()
    slots = [row * args.users_per_step // args.batch_size for row in range(args.batch_size)]

    def step(batch):
        trainer.user_step([(batch, slots[: len(batch["input_ids"])])])
        scheduler.step()

    return step


def steps_per_second(step, batches: list[dict]) -> float:
    start = time.perf_counter()
    for batch in batches:
        step(batch)
    return len(batches) / (time.perf_counter() - start)


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_memory(step, batches: list[dict], cuda: bool) -> float:
    """MiB the steps add at their peak to what was held before them: CUDA allocator peak in this process;
    on CPU the process's peak resident set (call it in a fresh process: freed memory is reused)."""
    if cuda:
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        for batch in batches:
            step(batch)
        torch.cuda.synchronize()
        return (torch.cuda.max_memory_allocated() - before) / 2**20
    before = resident_bytes()
    for batch in batches:
        step(batch)
    return max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before, 0) / 2**20


def cpu_peak_memory(name: str) -> float:
    """The side's peak memory, measured by this script run again for that side alone."""
    done = subprocess.run([sys.executable, __file__, *sys.argv[1:], "--memory-of", name],
                          capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1].split(":")[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tiny", action="store_true", help="a 2-layer, 64-wide BERT instead of all-MiniLM-L6-v2")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--users-per-step", type=int, default=4, help="users the DP user side reads each batch as")
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per block")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--users", type=int, default=40, help="synthetic patients to draw the batches from")
    parser.add_argument("--defaults-only", action="store_true",
                        help="skip DP hooks with the embeddings trained, non-private with them frozen, and DP ghost")
    parser.add_argument("--memory-of", help=argparse.SUPPRESS)  # internal: one side's peak memory, fresh process
    args = parser.parse_args()
    logging.set_verbosity_error()  # the warm start's fresh MLM head is reported as missing weights
    logging.disable_progress_bar()

    cuda = torch.cuda.is_available()
    accelerator = Accelerator(cpu=not cuda)
    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    n_batches = 2 + args.steps  # warm-up, memory pass, timed
    features = make_features(tokenizer, n_batches * args.batch_size, args.max_length, args.users)
    collator = PrivacyMaskingCollator(tokenizer, generator=torch.Generator().manual_seed(0))
    rows = features.select_columns(list(FEATURE_COLUMNS)).to_list()
    batches = [{k: v.to(accelerator.device) for k, v in collator(rows[i : i + args.batch_size]).items()}
               for i in range(0, len(rows), args.batch_size)]
    warmup, probe, timed = batches[:1], batches[1:2], batches[2:]
    model = make_model(args.tiny, tokenizer)
    total = n_batches * (args.repeats + 2)
    sides = {  # each side on its own copy of the same initial model, built when asked for
        "non-private": lambda: plain_step(accelerator, copy.deepcopy(model), total, args),
        "DP hooks": lambda: dp_step(accelerator, copy.deepcopy(model), total, args, features, collator, "hooks"),
        "DP user": lambda: dp_user_step(accelerator, copy.deepcopy(model), total, args, features, collator),
        "DP fast": lambda: dp_step(accelerator, copy.deepcopy(model), total, args, features, collator, "fast", False),
    }
    if not args.defaults_only:
        sides["non-private, frozen embeddings"] = lambda: plain_step(accelerator, freeze_embeddings(copy.deepcopy(model)),
                                                                     total, args)
        sides["DP hooks, embeddings trained"] = lambda: dp_step(accelerator, copy.deepcopy(model), total, args, features,
                                                                collator, "hooks", False)
        sides["DP ghost, frozen embeddings"] = lambda: dp_step(accelerator, copy.deepcopy(model), total, args, features, collator,
                                                               "ghost", True)
    if args.memory_of:
        print(f"peak_mib: {peak_memory(sides[args.memory_of](), warmup + probe, cuda)}")
        return
    memory = {name: peak_memory(make(), warmup + probe, cuda) if cuda else cpu_peak_memory(name)
              for name, make in sides.items()}
    sides = {name: make() for name, make in sides.items()}
    names = list(sides)

    masked = [int((b["labels"] != -100).sum()) for b in batches]
    widths = [b["input_ids"].shape[1] for b in batches]
    print(f"{'tiny BERT' if args.tiny else 'all-MiniLM-L6-v2 + fresh MLM head'}: "
          f"{sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters (word embeddings "
          f"{model.get_input_embeddings().weight.numel() / 1e6:.1f}M, tied to the output projection); batches of "
          f"{args.batch_size} x {min(widths)}-{max(widths)} tokens, {statistics.mean(masked):.0f} masked per batch; "
          f"{'CUDA' if cuda else f'CPU, {torch.get_num_threads()} torch threads'}")
    for step in sides.values():
        steps_per_second(step, warmup)
    rates: dict[str, list[float]] = {name: [] for name in names}
    for r in range(args.repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            rates[name].append(steps_per_second(sides[name], timed))

    print(f"{args.repeats} repeats of {args.steps} steps per side, interleaved:")
    print(f"  {'side':<32} {'median steps/s':>14} {'min':>7} {'max':>7} {'ms/step':>8} {'peak MiB':>9}")
    medians = {}
    for name, values in rates.items():
        medians[name] = statistics.median(values)
        print(f"  {name:<32} {medians[name]:>14.3f} {min(values):>7.3f} {max(values):>7.3f} "
              f"{1000 / medians[name]:>8.0f} {memory[name]:>9.0f}")
    if not args.defaults_only:
        base = medians["non-private, frozen embeddings"]
        print(f"frozen embeddings: non-private / DP ghost {base / medians['DP ghost, frozen embeddings']:.2f}x (steps/s)")
    print(f"peak memory: DP hooks {memory['DP hooks']:.0f} MiB, DP fast {memory['DP fast']:.0f} MiB, "
          f"DP user {memory['DP user']:.0f} MiB")
    print(f"dp_slowdown_hooks: {medians['non-private'] / medians['DP hooks']:.3f}")
    print(f"dp_slowdown_fast: {medians['non-private'] / medians['DP fast']:.3f}")
    if not args.defaults_only:
        print(f"dp_slowdown_hooks_trained: {medians['non-private'] / medians['DP hooks, embeddings trained']:.3f}")
        print(f"dp_slowdown_ghost_frozen: {base / medians['DP ghost, frozen embeddings']:.3f}")
    print(f"dp_user_slowdown: {medians['DP hooks'] / medians['DP user']:.3f}")


if __name__ == "__main__":
    main()
