"""Speed of our training step against a bare PyTorch loop on the same model and the same batches.

Every variant trains through `ppmlm.training.loop`, so its per-step cost is the product's training cost.
Three sides, each on its own copy of the same initial model, all fed the same batches, pre-collated once
by `PrivacyMaskingCollator` so that masking is not timed:

- ours: what `loop.py` does per step: `MaskedLMLoss` and AdamW prepared by `accelerate.Accelerator(cpu=True)`,
  `objective(...).mean()`, `accelerator.backward`, optimizer and linear-schedule steps, `zero_grad`, and
  the metrics window's per-step bookkeeping. `MaskedLMLoss` projects only the masked positions (~15%)
  to the vocabulary: a real saving, as the projection is the largest matrix product of a small encoder.
- ours, same math: the same loop with the head shortcut disabled, so the model computes full-vocabulary
  logits as Hugging Face does. Its per-sequence mean differs from HF's per-token mean by a few
  element-wise operations only, so this side isolates the overhead of our loop and objective.
- bare: `model(input_ids, attention_mask, labels).loss.backward()`, AdamW step, `zero_grad`.

Sides run in blocks of `--steps` steps, in rotating order, `--repeats` times; figures are medians.

    python bench/train_step.py [--tiny] [--batch-size 8] [--max-length 128] [--steps 8] [--repeats 5]

The last line is `trainer_overhead_ratio: X` (bare steps/s / ours-same-math steps/s); the line before it
gives the masked-head speedup (ours / ours same math).
"""
from __future__ import annotations

import argparse
import copy
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from accelerate import Accelerator  # noqa: E402
from transformers import AutoModelForMaskedLM, AutoTokenizer, BertConfig, get_linear_schedule_with_warmup, logging  # noqa: E402

from ppmlm.corpus.clinical import generate_corpus  # noqa: E402
from ppmlm.features import FEATURE_COLUMNS, build_features  # noqa: E402
from ppmlm.masking.collator import PrivacyMaskingCollator  # noqa: E402
from ppmlm.models import default_model_path  # noqa: E402
from ppmlm.training.loop import StepWindow  # noqa: E402
from ppmlm.training.objective import MaskedLMLoss  # noqa: E402

LR = 1e-4  # the paper's default (recipes/config.yaml); weight decay 0 there too


class FullVocabularyLoss(MaskedLMLoss):
    """MaskedLMLoss with the masked-only head shortcut off: logits for every position, as HF computes."""

    @property
    def head(self):
        return None


def make_batches(tokenizer, n_batches: int, batch_size: int, max_length: int, users: int) -> list[dict]:
    records = generate_corpus(users, seed=0)
    features = build_features(records, None, tokenizer, max_length=max_length)
    needed = n_batches * batch_size
    if len(features) < needed:
        raise SystemExit(f"{users} synthetic users give {len(features)} chunks, fewer than {needed}: raise --users")
    rows = features.shuffle(seed=0).select(range(needed)).select_columns(list(FEATURE_COLUMNS)).to_list()
    collator = PrivacyMaskingCollator(tokenizer, generator=torch.Generator().manual_seed(0))
    return [collator(rows[i : i + batch_size]) for i in range(0, needed, batch_size)]


def make_model(tiny: bool, tokenizer):
    if tiny:
        config = BertConfig(vocab_size=len(tokenizer), hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=128, max_position_embeddings=512)
        return AutoModelForMaskedLM.from_config(config)
    return AutoModelForMaskedLM.from_pretrained(default_model_path())


def ours_step(accelerator, objective_class, model, total_steps: int):
    """A step function doing what loop.py does per batch, with its own prepared objective and optimizer."""
    objective = objective_class(model)
    optimizer = torch.optim.AdamW(objective.parameters(), lr=LR, weight_decay=0.0)
    objective, optimizer = accelerator.prepare(objective, optimizer)
    scheduler = get_linear_schedule_with_warmup(optimizer, 0, total_steps)
    objective.train()
    window = StepWindow()

    def step(batch):
        loss = objective(batch["input_ids"], batch["attention_mask"], batch["labels"]).mean()
        accelerator.backward(loss)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        window.add(loss.detach(), (batch["labels"] != -100).sum(), batch["attention_mask"].sum())

    return step


def bare_step(model):
    """A plain PyTorch step with Hugging Face's own (full-vocabulary) masked-LM loss."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.0)
    model.train()

    def step(batch):
        loss = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"]).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

    return step


def steps_per_second(step, batches: list[dict]) -> float:
    start = time.perf_counter()
    for batch in batches:
        step(batch)
    return len(batches) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tiny", action="store_true", help="a 2-layer, 64-wide BERT instead of all-MiniLM-L6-v2")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=8, help="timed steps per block")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per side first")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--users", type=int, default=60, help="synthetic patients to draw the batches from")
    args = parser.parse_args()
    logging.set_verbosity_error()  # the warm start's fresh MLM head is reported as missing weights
    logging.disable_progress_bar()

    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    batches = make_batches(tokenizer, args.warmup + args.steps, args.batch_size, args.max_length, args.users)
    warmup, timed = batches[: args.warmup], batches[args.warmup :]
    model = make_model(args.tiny, tokenizer)
    total_steps = len(batches) * (args.repeats + 1)
    accelerator = Accelerator(cpu=True)
    sides = {
        "ours (MaskedLMLoss, masked-only head)": ours_step(accelerator, MaskedLMLoss, copy.deepcopy(model), total_steps),
        "ours, same math (full-vocabulary head)": ours_step(accelerator, FullVocabularyLoss, copy.deepcopy(model), total_steps),
        "bare PyTorch (HF loss)": bare_step(copy.deepcopy(model)),
    }
    names = list(sides)
    ours_name, same_name, bare_name = names

    masked = [int((b["labels"] != -100).sum()) for b in batches]
    tokens = [int(b["attention_mask"].sum()) for b in batches]
    widths = [b["input_ids"].shape[1] for b in batches]
    print(f"{'tiny BERT' if args.tiny else 'all-MiniLM-L6-v2 + fresh MLM head'}: "
          f"{sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, vocabulary {model.config.vocab_size}; "
          f"batches of {args.batch_size} x {min(widths)}-{max(widths)} tokens, {statistics.mean(tokens):.0f} real and "
          f"{statistics.mean(masked):.0f} masked tokens per batch on average; {torch.get_num_threads()} torch threads, CPU")
    for step in sides.values():
        steps_per_second(step, warmup)
    rates: dict[str, list[float]] = {name: [] for name in names}
    for r in range(args.repeats):
        for name in names[r % 3 :] + names[: r % 3]:
            rates[name].append(steps_per_second(sides[name], timed))

    print(f"{args.repeats} repeats of {args.steps} steps per side, interleaved:")
    print(f"  {'side':<40} {'median steps/s':>14} {'min':>7} {'max':>7} {'ms/step':>8}")
    medians = {}
    for name, values in rates.items():
        medians[name] = statistics.median(values)
        print(f"  {name:<40} {medians[name]:>14.3f} {min(values):>7.3f} {max(values):>7.3f} {1000 / medians[name]:>8.0f}")
    print(f"ours / bare: {medians[ours_name] / medians[bare_name]:.2f}x steps/s; "
          f"masked-head speedup (ours / ours same math): {medians[ours_name] / medians[same_name]:.2f}x")
    print(f"trainer_overhead_ratio: {medians[bare_name] / medians[same_name]:.3f}")


if __name__ == "__main__":
    main()
