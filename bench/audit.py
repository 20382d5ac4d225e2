"""Cost of the audit at its default settings against training on the embedded default.

Trains one epoch of a recipe (default ppmlm) with `ppmlm.pipeline.train`, then audits the checkpoint
three times, as epochs 1, 2 and 3 of a 3-epoch run, through `TrainingAudits` (what the per-epoch audit of a training
run calls) with the run's own audit settings (`AuditConfig.from_run_config`):

- first audit: the target pass and the reference pass (the likelihood-ratio attack). The reference here
  is the audited checkpoint itself: any reference of the same architecture (the population model, the
  starting checkpoint) costs the same.
- later audits: the reference energies come from the audit directory's cache (every epoch audits the
  same chunks under the same maskings, and the reference model does not change), and the inputs every epoch
  shares (chosen chunks and maskings, the auditor's graph, the identifiers, the inversion's probe) were
  prepared by the first, so only the target model's passes run.
- the final audit (epoch 3): a later audit, plus the privacy probe of every identifier occurrence of every member
  chunk and of the audited non-members' (`audit.privacy_probe: final`), whose chunks it cuts and locates first.

One epoch of training is timed from the moment the run has written split.json (data, blacklist and
features are ready; the blacklist build is cached and shared by every run, so it is not charged to an
epoch) to its epoch_end line (model loading, all steps and the checkpoint included).

The ratio that matters is what the audit adds to a training run: a run of E epochs (train.epochs, 4 by
default) audits once with the reference pass, E - 2 times without, and a final time with the probe of every
occurrence, so

    audit_cost_ratio = (first + (E - 2) * later + final) / (E * epoch)

Printed too: the first, later and final audits against an epoch, and audit_cost_ratio_per_epoch =
(first + (E - 1) * later) / (E * epoch), the run's audits with every epoch sampled (audit.privacy_probe: sampled).

    python bench/audit.py [--tiny] [--recipe ppmlm] [--users N] [--one-per-input] [key=value ...]

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
from ppmlm.audit.blind import BLIND, NAME  # noqa: E402
from ppmlm.audit.command import training_blacklist  # noqa: E402
from ppmlm.audit.occurrences import elsewhere_text, privacy_summary  # noqa: E402
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
    parser.add_argument("--one-per-input", action="store_true",
                        help="also probe the final audit with one occurrence per masked input (audit.probe_gap_words=null) and "
                             "compare what it finds and costs with the packed probe")
    parser.add_argument("overrides", nargs="*", help="configuration overrides, e.g. audit.max_tokens_per_user=512")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="ppmlm-bench-audit-") as tmp:
        overrides = [f"recipe={args.recipe}", "train.epochs=1", f"output_dir={tmp}/run", "audit.enabled=false",
                     f"blacklist.cache_dir={tmp}/blacklists",  # one entry: the audit finds the blacklist the run built
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
                                reference=checkpoint, final_epoch=3)
        timings, audited_epochs = [], []
        for epoch in (1, 2, 3):
            started = time.perf_counter()
            audited_epochs.append(audits.audit(checkpoint, epoch))
            timings.append(time.perf_counter() - started)
        figures = audited_epochs[-1]
        if args.one_per_input:
            alone = AuditConfig.from_run_config(compose_config([*overrides, "audit.probe_gap_words=null"]), progress=False)
            started = time.perf_counter()
            single = TrainingAudits(alone, RunData(corpus, split, blacklist, features=None), Path(tmp) / "alone",
                                    reference=checkpoint).audit(checkpoint, 1)
            single_seconds = time.perf_counter() - started
        audited, probe = figures["audited"], figures["privacy"]["probe"]

    first, later, final = timings
    epochs = compose_config([f"recipe={args.recipe}"]).train.epochs  # a default run of this recipe
    print(f"settings: {config.max_tokens_per_user} tokens per user, user cap {config.max_users_per_side}, chunk cap "
          f"{config.max_chunks_per_user}, {config.lend_population} population users lent, {config.maskings} maskings, "
          f"{config.max_length}-token chunks; runs of {epochs} epochs")
    sides = [[audited[f"{side}_{what}"] for what in ("users", "users_available", "samples", "chunks_available", "tokens")]
             for side in ("member", "non_member")]
    print("audited: " + ", ".join(f"{users} of {available} {name} ({samples} of their {chunks} chunks, {tokens} tokens)"
                                  for name, (users, available, samples, chunks, tokens)
                                  in zip(("members", "non-members"), sides)))
    print(f"final audit's privacy probe: {probe['member_chunks']} member and {probe['non_member_chunks']} non-member "
          f"chunks, {probe['masked_inputs']} masked inputs (occurrences at least {probe['gap_words']} words apart share one)")
    for name, value in privacy_summary(figures)[1:]:  # counts only
        print(f"final audit: {name}: {value}")
    sampled = audited_epochs[1]["privacy"]
    print(f"later audit (sampled): identifier occurrences predicted {sampled['occurrences']['predicted']} of "
          f"{sampled['occurrences']['probed']}; identifiers predicted outside the probed chunks: {elsewhere_text(sampled)}")
    if args.one_per_input:
        for name in ("privacy", "privacy_independent"):
            if figures.get(name):
                packed, alone = figures[name]["occurrences"], single[name]["occurrences"]
                print(f"{name} occurrences predicted, packed / one per input: {packed['predicted']} / {alone['predicted']} "
                      f"of {packed['probed']}; identifiers predicted {figures[name]['leaked']} / {single[name]['leaked']}")
        print(f"masked inputs packed / one per input: {probe['masked_inputs']} / {single['privacy']['probe']['masked_inputs']}; "
              f"final audit {final:.1f}s / {single_seconds:.1f}s (the latter with the first audit's reference pass)")
    for level, result in figures["attacks"][BLIND].items():
        print(f"{NAME}, {level} level: " + ("not run" if result is None else
                                           f"AUC {result['auc']:.3f} [{result['auc_ci'][0]:.3f}, {result['auc_ci'][1]:.3f}]"))
    print(f"one training epoch: {training:.1f}s; first audit (with the reference pass): {first:.1f}s "
          f"({first / training:.3f} of an epoch); later audits (reference energies cached): {later:.1f}s "
          f"({later / training:.3f}); final audit (every identifier occurrence probed): {final:.1f}s "
          f"({final / training:.3f})")
    print(f"audit_cost_ratio_per_epoch: {(first + (epochs - 1) * later) / (epochs * training):.3f}")
    print(f"audit_cost_ratio: {(first + max(epochs - 2, 0) * later + final) / (epochs * training):.3f}")


if __name__ == "__main__":
    main()
