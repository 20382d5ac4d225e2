"""Packing (`train.packing`) against batches padded to their longest chunk: the same chunks trained by our step.

Both sides train the same chunks of the synthetic corpus (`--chunks` of them, drawn with seed 0, cut at
`--max-length`), masked by `PrivacyMaskingCollator`, on copies of one model, with the step of bench/train_step.py
(MaskedLMLoss and AdamW prepared by accelerate, as loop.py): padded, `--batch-size` chunks a batch, padded to the
batch's longest; packed, `--batch-size` rows a batch, each row as many whole chunks as fit in `--max-length` tokens
(`ppmlm.training.packing`: block-diagonal attention, positions restarting per chunk). A pass is one sweep over
those chunks; passes alternate between the sides, `--repeats` times, after an untimed one each. Batches are
collated before timing (and moved to the device), so only the model's work is timed.

Printed: each side's share of positions that hold text, batches per pass, median seconds per pass and text
tokens/s; the last line is `packing_speedup: X`, padded seconds per pass over packed (above 1: packing is faster).
Packing pays where chunks are short of max_length (notes shorter than it, each note's last chunk) and the step's
cost follows the positions computed: on a GPU at 512 tokens. Attention still spans a whole row, so a row of
several chunks costs more attention than its chunks alone.

    python bench/packing.py [--device cuda|cpu] [--model-size tiny|minilm|base] [--max-length 512]
                            [--batch-size 8] [--chunks 256] [--repeats 3] [--mixed-precision no|bf16]
"""
from __future__ import annotations

import argparse
import copy
import os
import statistics

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from accelerate import Accelerator  # noqa: E402
from train_step import make_model, ours_step, steps_per_second  # noqa: E402
from transformers import AutoTokenizer, logging  # noqa: E402

from ppmlm.corpus.clinical import generate_corpus  # noqa: E402
from ppmlm.features import FEATURE_COLUMNS, build_features  # noqa: E402
from ppmlm.masking.collator import PrivacyMaskingCollator  # noqa: E402
from ppmlm.models import default_model_path  # noqa: E402
from ppmlm.training.objective import MaskedLMLoss  # noqa: E402
from ppmlm.training.packing import PackedRows, PackingCollator  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--model-size", choices=["tiny", "minilm", "base"], default="tiny")
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=8, help="chunks a padded batch, rows a packed one")
    parser.add_argument("--chunks", type=int, default=256, help="chunks trained per pass, the same on both sides")
    parser.add_argument("--users", type=int, default=80, help="synthetic patients to draw the chunks from")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mixed-precision", choices=["no", "bf16"], default="no")
    args = parser.parse_args()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    device = torch.device(args.device)

    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    features = build_features(generate_corpus(args.users, seed=0), None, tokenizer, max_length=args.max_length)
    if len(features) < args.chunks:
        raise SystemExit(f"{args.users} synthetic users give {len(features)} chunks, fewer than {args.chunks}: raise --users")
    chunks = features.shuffle(seed=0).select(range(args.chunks)).select_columns(list(FEATURE_COLUMNS))
    masking = PrivacyMaskingCollator(tokenizer, generator=torch.Generator().manual_seed(0))
    rows = PackedRows(chunks, args.max_length, seed=0)
    listed = chunks.to_list()
    batches = {
        "padded": [masking(listed[i : i + args.batch_size]) for i in range(0, len(listed), args.batch_size)],
        "packed": [PackingCollator(masking)([rows[r] for r in range(i, min(i + args.batch_size, len(rows)))])
                   for i in range(0, len(rows), args.batch_size)],
    }
    batches = {name: [{k: v.to(device) for k, v in b.items()} for b in side] for name, side in batches.items()}
    text = int(rows.lengths.sum())

    model = make_model(args.model_size, tokenizer)
    accelerator = Accelerator(cpu=device.type == "cpu", mixed_precision=args.mixed_precision)
    options = argparse.Namespace(compile=False, fused=False)
    sides = {name: ours_step(accelerator, MaskedLMLoss, copy.deepcopy(model), len(side) * (args.repeats + 1), options)
             for name, side in batches.items()}
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {torch.get_num_threads()} torch threads"
    print(f"{args.model_size} model, {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters; {args.chunks} "
          f"chunks of at most {args.max_length} tokens ({text / args.chunks:.0f} on average); {where}; "
          f"mixed precision {args.mixed_precision}")
    seconds: dict[str, list[float]] = {name: [] for name in sides}
    for name, step in sides.items():
        steps_per_second(step, batches[name], device)  # untimed pass
    for r in range(args.repeats):
        for name in (list(sides) if r % 2 == 0 else list(sides)[::-1]):
            seconds[name].append(len(batches[name]) / steps_per_second(sides[name], batches[name], device))
    print(f"{'side':<8} {'text share':>10} {'batches':>8} {'s/pass median':>14} {'min':>8} {'max':>8} {'text tokens/s':>14}")
    for name, values in seconds.items():
        positions = sum(b["input_ids"].numel() for b in batches[name])
        print(f"{name:<8} {text / positions:>10.1%} {len(batches[name]):>8} {statistics.median(values):>14.3f} "
              f"{min(values):>8.3f} {max(values):>8.3f} {text / statistics.median(values):>14.0f}")
    print(f"packing_speedup: {statistics.median(seconds['padded']) / statistics.median(seconds['packed']):.3f}")


if __name__ == "__main__":
    main()
