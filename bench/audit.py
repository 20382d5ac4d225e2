"""Cost of the audit at its default settings against training on the embedded default.

Trains one epoch of a recipe (default ppmlm) with `ppmlm.pipeline.train`, then audits the checkpoint
twice, as epochs 1 and 2 of a run, through `TrainingAudits` (what the per-epoch audit of a training run calls) with
the run's own audit settings (`AuditConfig.from_run_config`):

- first audit: the target pass and the reference pass (the likelihood-ratio attack). The reference here
  is the audited checkpoint itself: any reference of the same architecture (the population model, the
  starting checkpoint) costs the same.
- later audits: the reference energies come from the audit directory's cache (every epoch audits the
  same chunks under the same maskings, and the reference model does not change), and the inputs every epoch
  shares (chosen chunks and maskings, the auditor's graph, the identifiers, the inversion's probe) were
  prepared by the first, so only the target model's passes run.

One epoch of training is timed from the moment the run has written split.json (data, blacklist and
features are ready; the blacklist build is cached and shared by every run, so it is not charged to an
epoch) to its epoch_end line (model loading, all steps and the checkpoint included).

The ratio that matters is what the audit adds to a training run: a run of E epochs (train.epochs, 4 by
default) audits once with the reference pass and E - 1 times without, so

    audit_cost_ratio = (first + (E - 1) * later) / (E * epoch)

The first and later ratios are printed too.

    python bench/audit.py [--tiny] [--recipe ppmlm] [--users N] [key=value ...]

Extra key=value overrides reach the run and its audit, e.g. audit.max_tokens_per_user=512 to price
another budget.

The last line is `audit_cost_ratio: X` (target <= 0.25).
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from transformers import AutoTokenizer  # noqa: E402

from ppmlm.audit import AuditConfig, TrainingAudits  # noqa: E402
from ppmlm.audit.command import training_blacklist  # noqa: E402
from ppmlm.corpus.loading import load_run_corpus  # noqa: E402
from ppmlm.corpus.split import UserSplit  # noqa: E402
from ppmlm.identifiers.blacklist import Blacklist  # noqa: E402
from ppmlm.pipeline import compose_config, train  # noqa: E402
from ppmlm.rundir import RunDirectory  # noqa: E402
from ppmlm.training.data import RunData  # noqa: E402

TINY = ["+model.config={model_type: bert, hidden_size: 64, num_hidden_layers: 2, num_attention_heads: 2, intermediate_size: 128}",
        "train.max_length=128"]


def epoch_seconds(run_dir: Path) -> float:
    run = RunDirectory(run_dir)
    ready = run.split.stat().st_mtime
    ends = [json.loads(line) for line in run.metrics.read_text().splitlines() if '"epoch_end"' in line]
    return ends[-1]["time"] - ready


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="a tiny model from a config, 128-token chunks (quick check)")
    parser.add_argument("--recipe", default="ppmlm")
    parser.add_argument("--users", type=int, help="patients of the embedded corpus (default: data.synth_users of the recipes)")
    parser.add_argument("overrides", nargs="*", help="configuration overrides, e.g. audit.max_tokens_per_user=512")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="ppmlm-bench-audit-") as tmp:
        overrides = [f"recipe={args.recipe}", "train.epochs=1", f"output_dir={tmp}/run", "audit.enabled=false",
                     *([f"data.synth_users={args.users}"] if args.users else []), *(TINY if args.tiny else []), *args.overrides]
        cfg = compose_config(overrides)
        run_dir = train(cfg)
        training = epoch_seconds(run_dir)
        checkpoint = run_dir / "checkpoints" / "epoch-1"
        corpus = load_run_corpus(cfg.data, cfg.seed)
        split = UserSplit.load(RunDirectory(run_dir).split)
        blacklist = Blacklist.load(training_blacklist(cfg, corpus, split, AutoTokenizer.from_pretrained(str(checkpoint))))
        config = AuditConfig.from_run_config(cfg, progress=False)
        audits = TrainingAudits(config, RunData(corpus, split, blacklist, features=None), Path(tmp) / "audit",
                                reference=checkpoint)
        timings = []
        for epoch in (1, 2):
            started = time.perf_counter()
            audited = audits.audit(checkpoint, epoch)["audited"]
            timings.append(time.perf_counter() - started)

    first, later = timings
    epochs = compose_config([f"recipe={args.recipe}"]).train.epochs  # a default run of this recipe
    print(f"settings: {config.max_tokens_per_user} tokens per user, user cap {config.max_users_per_side}, chunk cap "
          f"{config.max_chunks_per_user}, {config.lend_population} population users lent, {config.maskings} maskings, "
          f"{config.max_length}-token chunks; runs of {epochs} epochs")
    sides = [[audited[f"{side}_{what}"] for what in ("users", "users_available", "samples", "chunks_available", "tokens")]
             for side in ("member", "non_member")]
    print("audited: " + ", ".join(f"{users} of {available} {name} ({samples} of their {chunks} chunks, {tokens} tokens)"
                                  for name, (users, available, samples, chunks, tokens)
                                  in zip(("members", "non-members"), sides)))
    print(f"one training epoch: {training:.1f}s; first audit (with the reference pass): {first:.1f}s "
          f"({first / training:.3f} of an epoch); later audits (reference energies cached): {later:.1f}s "
          f"({later / training:.3f})")
    print(f"audit_cost_ratio: {(first + (epochs - 1) * later) / (epochs * training):.3f}")


if __name__ == "__main__":
    main()
