"""Speed of our training step against a bare PyTorch loop on the same model and the same batches, on CPU or CUDA.

Every variant trains through `ppmlm.training.loop`, so its per-step cost is the product's training cost.
Three sides, each on its own copy of the same initial model, all fed the same batches, pre-collated once
by `PrivacyMaskingCollator` (and moved to the device) so that masking is not timed:

- ours: what `loop.py` does per step: `MaskedLMLoss` and AdamW prepared by `accelerate.Accelerator`,
  `objective(...).mean()`, `accelerator.backward`, optimizer and linear-schedule steps, `zero_grad`, and
  the metrics window's per-step bookkeeping. `MaskedLMLoss` projects only the masked positions (~15%)
  to the vocabulary: a real saving, as the projection is the largest matrix product of a small encoder.
- ours, same math: the same loop with the head shortcut disabled, so the model computes full-vocabulary
  logits as Hugging Face does. Its per-sequence mean differs from HF's per-token mean by a few
  element-wise operations only, so this side isolates the overhead of our loop and objective.
- bare: `model(input_ids, attention_mask, labels).loss.backward()`, AdamW step, `zero_grad`.

The speed options of docs/training.md apply to every side alike: `--mixed-precision` (accelerate's autocast
for ours, `torch.autocast` for bare, with a gradient scaler for fp16), `--fused` (fused AdamW kernels),
`--compile` (torch.compile of the encoder, as `train.compile`; its compilation happens in the untimed warm-up).

Sides run in blocks of `--steps` steps, in rotating order, `--repeats` times; figures are medians, timed with
the device synchronised at both ends of a block.

Throughput and MFU. tokens/s counts attended tokens (padding excluded: the work the loss needs); padded
positions/s is printed beside it. `train_mfu` (CUDA) = achieved FLOP/s of "ours" / the card's dense bf16 peak,
with the convention of issue 16: FLOPs = 6 x (every parameter, the tied word embeddings counted once) x
attended tokens. It leaves out attention's sequence-length term and counts the vocabulary projection at every
token where the loss computes it at the masked ones only; the line before it gives the model FLOPs counted
exactly (6 x encoder-layer parameters x tokens, + 6 x MLM-head parameters x masked tokens, + 12 x layers x
hidden x sequence width x tokens for attention; embedding lookups cost none) and the MFU they give. Peaks (dense bf16,
TFLOP/s) by device name: H100 SXM 989, H100 PCIe 756, H200 989, A100 312; `--peak-tflops` overrides, and an
unknown card prints `train_mfu: n/a`. On CPU there is no peak to divide by: `train_mfu: n/a`.

    python bench/train_step.py [--device cuda|cpu] [--model-size minilm|base] [--tiny] [--batch-size 8]
                               [--max-length 128] [--mixed-precision no|bf16|fp16] [--compile] [--fused]
                               [--steps 8] [--repeats 5] [--peak-tflops T]
    python bench/train_step.py --device cuda --model-size base --max-length 512 --mixed-precision bf16 \\
                               --fused --batch-size 32   # issue 16's target: train_mfu >= 0.30 on an H100

`--model-size base` is a BERT-base-size masked LM built from a config (12 layers, hidden 768, 12 heads,
intermediate 3072, the offline tokenizer's vocabulary; randomly initialised: no such weights ship offline);
minilm (the default) is the offline warm start, all-MiniLM-L6-v2 with a fresh MLM head.

The last line is `trainer_overhead_ratio: X` (bare steps/s / ours-same-math steps/s), on every device; the
lines before it give `tokens_per_s: X` and `train_mfu: X` of ours, and the masked-head speedup (ours / ours
same math).
"""
from __future__ import annotations

import argparse
import contextlib
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
from ppmlm.models import default_model_path, lm_head  # noqa: E402
from ppmlm.training.loop import StepWindow  # noqa: E402
from ppmlm.training.objective import MaskedLMLoss  # noqa: E402

LR = 1e-4  # the paper's default (recipes/config.yaml); weight decay 0 there too
# Dense bf16 peaks in TFLOP/s, by a piece of torch.cuda.get_device_name(); the first match wins.
PEAK_BF16_TFLOPS = (("H100 PCIe", 756.0), ("H100", 989.0), ("H200", 989.0), ("A100", 312.0))
AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}


class FullVocabularyLoss(MaskedLMLoss):
    """MaskedLMLoss with the masked-only head shortcut off: logits for every position, as HF computes."""

    @property
    def head(self):
        return None


def make_batches(tokenizer, n_batches: int, batch_size: int, max_length: int, users: int, device) -> list[dict]:
    records = generate_corpus(users, seed=0)
    features = build_features(records, None, tokenizer, max_length=max_length)
    needed = n_batches * batch_size
    if len(features) < needed:
        raise SystemExit(f"{users} synthetic users give {len(features)} chunks, fewer than {needed}: raise --users")
    rows = features.shuffle(seed=0).select(range(needed)).select_columns(list(FEATURE_COLUMNS)).to_list()
    collator = PrivacyMaskingCollator(tokenizer, generator=torch.Generator().manual_seed(0))
    return [{k: v.to(device) for k, v in collator(rows[i : i + batch_size]).items()} for i in range(0, needed, batch_size)]


def make_model(size: str, tokenizer):
    """tiny: 2 layers, 64 wide; minilm: the offline warm start; base: BERT-base's shape from a config."""
    if size == "tiny":
        config = BertConfig(vocab_size=len(tokenizer), hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=128, max_position_embeddings=512)
        return AutoModelForMaskedLM.from_config(config)
    if size == "base":
        config = BertConfig(vocab_size=len(tokenizer), hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                            intermediate_size=3072, max_position_embeddings=512)
        return AutoModelForMaskedLM.from_config(config)
    return AutoModelForMaskedLM.from_pretrained(default_model_path())


def adamw(parameters, fused: bool):
    return torch.optim.AdamW(parameters, lr=LR, weight_decay=0.0, **({"fused": True} if fused else {}))


def ours_step(accelerator, objective_class, model, total_steps: int, args):
    """A step function doing what loop.py does per batch, with its own prepared objective and optimizer."""
    objective = objective_class(model)
    if args.compile:
        model.base_model.compile()
    optimizer = adamw(objective.parameters(), args.fused)
    objective, optimizer = accelerator.prepare(objective, optimizer)
    scheduler = get_linear_schedule_with_warmup(optimizer, 0, total_steps)
    objective.train()
    window = StepWindow()

    def step(batch):
        loss = objective(**batch).mean()  # packed batches too (bench/packing.py)
        accelerator.backward(loss)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        window.add(loss.detach(), (batch["labels"] != -100).sum(), batch["attention_mask"].sum())

    return step


def bare_step(model, device, args):
    """A plain PyTorch step with Hugging Face's own (full-vocabulary) masked-LM loss, autocast as asked."""
    model.to(device)
    if args.compile:
        model.base_model.compile()
    optimizer = adamw(model.parameters(), args.fused)
    dtype = AUTOCAST.get(args.mixed_precision)
    scaler = torch.amp.GradScaler(device.type) if args.mixed_precision == "fp16" else None
    model.train()

    def step(batch):
        with torch.autocast(device.type, dtype=dtype) if dtype else contextlib.nullcontext():
            loss = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"]).loss
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        optimizer.zero_grad()

    return step


def synchronize(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def steps_per_second(step, batches: list[dict], device) -> float:
    synchronize(device)
    start = time.perf_counter()
    for batch in batches:
        step(batch)
    synchronize(device)
    return len(batches) / (time.perf_counter() - start)


def peak_tflops(device, override: float | None) -> tuple[float | None, str]:
    """The card's dense bf16 peak and where it comes from; None on CPU or for a card not in the table."""
    if override:
        return override, "--peak-tflops"
    if device.type != "cuda":
        return None, "no peak for a CPU"
    name = torch.cuda.get_device_name(device)
    for piece, tflops in PEAK_BF16_TFLOPS:
        if piece in name:
            return tflops, f"{name}, dense bf16"
    return None, f"{name} is not in the table of peaks: pass --peak-tflops"


def exact_flops_per_step(model, batch: dict) -> float:
    """Model FLOPs of one training step (forward and backward, 3x the forward), counted as the loss computes
    them: the encoder's matrices at every attended token, attention at the batch's width, the MLM head (its
    transform and the vocabulary projection) at the masked tokens only; embedding lookups cost none."""
    config = model.config
    encoder = sum(p.numel() for p in model.base_model.encoder.parameters())
    head = sum(p.numel() for p in lm_head(model).parameters())
    tokens = float(batch["attention_mask"].sum())
    masked = float((batch["labels"] != -100).sum())
    width = batch["input_ids"].shape[1]
    return 6 * encoder * tokens + 6 * head * masked + 12 * config.num_hidden_layers * config.hidden_size * width * tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--model-size", choices=["minilm", "base"], default="minilm",
                        help="minilm: the offline warm start; base: a BERT-base-size model from a config")
    parser.add_argument("--tiny", action="store_true", help="a 2-layer, 64-wide BERT instead (quick check)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--mixed-precision", choices=["no", "bf16", "fp16"], default="no")
    parser.add_argument("--compile", action="store_true", help="torch.compile the encoder on every side")
    parser.add_argument("--fused", action="store_true", help="fused AdamW kernels on every side")
    parser.add_argument("--peak-tflops", type=float, help="the card's dense bf16 peak, TFLOP/s (else from the table)")
    parser.add_argument("--steps", type=int, default=8, help="timed steps per block")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per side first")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--users", type=int, default=60, help="synthetic patients to draw the batches from")
    args = parser.parse_args()
    logging.set_verbosity_error()  # the warm start's fresh MLM head is reported as missing weights
    logging.disable_progress_bar()
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device here; use --device cpu")
    device = torch.device(args.device)

    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    batches = make_batches(tokenizer, args.warmup + args.steps, args.batch_size, args.max_length, args.users, device)
    warmup, timed = batches[: args.warmup], batches[args.warmup :]
    size = "tiny" if args.tiny else args.model_size
    model = make_model(size, tokenizer)
    total_steps = len(batches) * (args.repeats + 1)
    accelerator = Accelerator(cpu=device.type == "cpu", mixed_precision=args.mixed_precision)
    sides = {
        "ours (MaskedLMLoss, masked-only head)": ours_step(accelerator, MaskedLMLoss, copy.deepcopy(model), total_steps, args),
        "ours, same math (full-vocabulary head)": ours_step(accelerator, FullVocabularyLoss, copy.deepcopy(model),
                                                            total_steps, args),
        "bare PyTorch (HF loss)": bare_step(copy.deepcopy(model), device, args),
    }
    names = list(sides)
    ours_name, same_name, bare_name = names

    masked = [int((b["labels"] != -100).sum()) for b in batches]
    tokens = [int(b["attention_mask"].sum()) for b in timed]
    positions = [b["input_ids"].numel() for b in timed]
    widths = [b["input_ids"].shape[1] for b in batches]
    parameters = sum(p.numel() for p in model.parameters())
    where = (torch.cuda.get_device_name(device) if device.type == "cuda"
             else f"CPU, {torch.get_num_threads()} torch threads")
    options = f"mixed precision {args.mixed_precision}, fused AdamW {args.fused}, compile {args.compile}"
    print(f"{dict(tiny='tiny BERT', minilm='all-MiniLM-L6-v2 + fresh MLM head', base='BERT-base size')[size]}: "
          f"{parameters / 1e6:.1f}M parameters, vocabulary {model.config.vocab_size}; "
          f"batches of {args.batch_size} x {min(widths)}-{max(widths)} tokens, {statistics.mean(tokens):.0f} real and "
          f"{statistics.mean(masked):.0f} masked tokens per batch on average; {where}; {options}")
    for step in sides.values():
        steps_per_second(step, warmup, device)
    rates: dict[str, list[float]] = {name: [] for name in names}
    for r in range(args.repeats):
        for name in names[r % 3 :] + names[: r % 3]:
            rates[name].append(steps_per_second(sides[name], timed, device))

    print(f"{args.repeats} repeats of {args.steps} steps per side, interleaved:")
    print(f"  {'side':<40} {'median steps/s':>14} {'min':>7} {'max':>7} {'ms/step':>8} {'tokens/s':>10}")
    medians = {}
    per_step_tokens = sum(tokens) / len(tokens)
    for name, values in rates.items():
        medians[name] = statistics.median(values)
        print(f"  {name:<40} {medians[name]:>14.3f} {min(values):>7.3f} {max(values):>7.3f} "
              f"{1000 / medians[name]:>8.1f} {medians[name] * per_step_tokens:>10.0f}")
    ours_rate = medians[ours_name]
    tokens_per_s = ours_rate * per_step_tokens
    print(f"ours / bare: {ours_rate / medians[bare_name]:.2f}x steps/s; "
          f"masked-head speedup (ours / ours same math): {ours_rate / medians[same_name]:.2f}x; "
          f"padded positions/s (ours): {ours_rate * sum(positions) / len(positions):.0f}")
    peak, source = peak_tflops(device, args.peak_tflops)
    issue_flops = 6 * parameters * tokens_per_s
    exact_flops = ours_rate * statistics.mean(exact_flops_per_step(model, b) for b in timed)
    print(f"achieved (ours): {issue_flops / 1e12:.3f} TFLOP/s as 6 x parameters x tokens/s, {exact_flops / 1e12:.3f} "
          f"TFLOP/s counted exactly" + (f"; exact MFU {exact_flops / (peak * 1e12):.4f}" if peak else "")
          + f" (peak: {f'{peak:g} TFLOP/s, ' if peak else ''}{source})")
    print(f"tokens_per_s: {tokens_per_s:.0f}")
    print(f"train_mfu: {issue_flops / (peak * 1e12):.4f}" if peak else "train_mfu: n/a")
    print(f"trainer_overhead_ratio: {medians[bare_name] / medians[same_name]:.3f}")


if __name__ == "__main__":
    main()
