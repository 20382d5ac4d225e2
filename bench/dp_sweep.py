"""DP-SGD hyperparameters found without touching private data: a small sweep on a synthetic tuning corpus.

Tuning on the private corpus would itself leak it (every trial is a look at the data, and the chosen setting
depends on it), so this script tunes on synthetic users drawn with the reserved seed TUNING_SYNTH_SEED (-2): no
run's embedded corpus, no `ppmlm synth` corpus (seeds >= 0) and not the public warm start (seed -1) holds them.
The recipe's defaults (recipes/recipe/dp-user.yaml, dp.yaml) come from its output; docs/dp.md has the figures.

1. **C from gradient-norm quantiles.** The warm-started model (the recipe's own public warm start, cached) is
   asked for per-chunk gradient norms and, under unit=user, the norms of a user's summed gradient over the chunks a
   step draws for a user (train.dp.max_chunks_per_user), on the tuning corpus's training users, over the
   parameters DP-SGD trains (train.dp.freeze_embeddings). The printed quantiles give C: the literature clips most
   gradients (Li et al. 2022 clip all, C = 0.1; Ponomareva et al. 2023 pick C at a low-to-middle quantile of
   the norms so that clipping stays informative); `--clip-quantile` (0.5) picks one for the sweep's runs. The
   recipes keep C below the 10th percentile, nearly every unit clipped, where AdamW's step barely depends on C
   (docs/dp.md "Defaults").
2. **Expected logical batch and learning rate.** DP runs of the recipe at the target ε (Poisson batches of
   `--batches` expected users or chunks, processed in physical batches of train.dp.physical_batch_size), at
   each `--lrs`, for `--epochs`, each audited on held-out tuning users; utility is the audit's masked whole-word
   accuracy on them. The same recipe without DP (its non-private batch and learning rate) and the warm start
   alone (no private training) frame it.
3. **What DP-SGD trains.** `--parameters all bias+norm` repeats 1 and 2 for each train.dp.parameters subset: the
   norms (and so C) are measured over that subset's parameters only.

    python bench/dp_sweep.py [--recipe dp-user] [--users 320] [--epochs 2] [--epsilon 8] [--batches 32 96]
                             [--lrs 1e-4 3e-4 1e-3] [--parameters all bias+norm] [--clip-quantile 0.5]
                             [--norm-users 24] [--set KEY=VALUE ...]

Runs live under --work (default runs/dp-sweep/); a finished run is reused. The last line is
`dp_sweep_utility_ratio: X` (the best DP point's utility / the same recipe's without DP, on the tuning corpus).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from contextlib import nullcontext
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from opacus.grad_sample import GradSampleModule  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dp_utility import figures, number, train, warm_start_utility  # noqa: E402

from ppmlm.config import RunConfig  # noqa: E402
from ppmlm.corpus.domains import generate_synthetic  # noqa: E402
from ppmlm.corpus.engine import write_jsonl  # noqa: E402
from ppmlm.corpus.loading import load_corpus  # noqa: E402
from ppmlm.corpus.split import split_users  # noqa: E402
from ppmlm.features import FEATURE_COLUMNS, build_features  # noqa: E402
from ppmlm.masking.collator import PrivacyMaskingCollator  # noqa: E402
from ppmlm.models import TUNING_SYNTH_SEED, default_model_path  # noqa: E402
from ppmlm.pipeline import compose_config  # noqa: E402
from ppmlm.training.dp.config import TRAINED_PARAMETERS  # noqa: E402
from ppmlm.training.dp.model import PerSampleMaskedLMLoss, train_only, unshare_head_bias  # noqa: E402
from ppmlm.training.dp.sampling import chunks_by_user  # noqa: E402
from ppmlm.training.loop import load_model  # noqa: E402
from ppmlm.training.warm_start import public_warm_start  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)


def tuning_corpus(out: Path, users: int, domain: str = "clinical") -> Path:
    """The synthetic tuning corpus, drawn with the reserved TUNING_SYNTH_SEED; written once."""
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(generate_synthetic(domain, users, seed=TUNING_SYNTH_SEED), out)
    return out


def gradient_norms(model, features, collator, freeze_embeddings: bool, per_user: int | None, batch: int = 8,
                   seed: int = 0, parameters: str = "all") -> dict:
    """L2 norms of the gradients DP-SGD would clip: of each chunk's mean masked-token loss, and of each user's sum of
    up to `per_user` of their chunks (drawn by `seed`), over the parameters DP-SGD trains (all, or all but the word
    embeddings, and of those `parameters`: train.dp.parameters); the same objective and mode as the DP trainer
    (PerSampleMaskedLMLoss, Opacus per-sample hooks, dropout on). Also the users' agreement: the length of the mean
    of their sums scaled to length 1 (1: all point one way; about 1/sqrt(users) at random), which with the trained
    parameters' count d sets a DP step's signal to noise, about agreement * B / (sigma * sqrt(d)) (docs/dp.md)."""
    model.requires_grad_(True)
    if freeze_embeddings:
        model.get_input_embeddings().weight.requires_grad_(False)
    train_only(model, parameters)
    unshare_head_bias(model)
    module = GradSampleModule(PerSampleMaskedLMLoss(model), loss_reduction="sum").train()
    rows = features.select_columns(list(FEATURE_COLUMNS)).to_list()
    generator = torch.Generator().manual_seed(seed)
    groups = list(chunks_by_user(features["user_id"]).values())
    picked = [[group[i] for i in torch.randperm(len(group), generator=generator)[:per_user or len(group)].tolist()]
              for group in groups]
    chunk_norms, user_norms, directions = [], [], 0
    for chunks in picked:
        summed = None
        for start in range(0, len(chunks), batch):
            part = collator([rows[i] for i in chunks[start:start + batch]])
            module(part["input_ids"], part["attention_mask"], part["labels"]).sum().backward()
            grads = [p.grad_sample.flatten(1) for p in module.parameters() if p.requires_grad]
            chunk_norms += torch.cat(grads, dim=1).norm(dim=1).tolist()
            user_sum = torch.cat([g.sum(0) for g in grads])
            summed = user_sum if summed is None else summed + user_sum
            module.zero_grad(set_to_none=True)
            for p in module.parameters():
                p.grad_sample = None
        user_norms.append(float(summed.norm()))
        directions = directions + summed / summed.norm()
    module.remove_hooks()
    return {"chunk": chunk_norms, "user": user_norms, "agreement": float(directions.norm()) / len(picked)}


def quantiles(values: list[float]) -> dict[float, float]:
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return {q: cuts[round(q * 100) - 1] for q in QUANTILES}


def measure_norms(args, corpus_path: Path, parameters: str) -> dict:
    """Quantiles of the chunk and user gradient norms of the recipe's warm-started model on the tuning members, over
    the `parameters` DP-SGD would train."""
    cfg = RunConfig.from_config(compose_config([f"recipe={args.recipe}", f"data.path={corpus_path}", *args.set]))
    tokenizer = AutoTokenizer.from_pretrained(str(cfg.model.name_or_path or default_model_path()))
    corpus = load_corpus(corpus_path)
    accelerator = SimpleNamespace(is_main_process=True, device=torch.device("cpu"), print=print,
                                  main_process_first=nullcontext)
    torch.manual_seed(cfg.seed)
    model, _ = public_warm_start(cfg, load_model(cfg.model, tokenizer), tokenizer, corpus, accelerator)
    split = split_users(corpus["user_id"], seed=cfg.seed, audit_fraction=cfg.data.audit_fraction,
                        population_fraction=cfg.data.population_fraction)
    members = sorted(split.members)[: args.norm_users]
    wanted = set(members)
    features = build_features(corpus.filter(lambda user: user in wanted, input_columns="user_id"), None, tokenizer,
                              max_length=cfg.train.max_length)
    collator = PrivacyMaskingCollator(tokenizer, mlm_probability=cfg.masking.mlm_probability,
                                      generator=torch.Generator().manual_seed(0))
    norms = gradient_norms(model, features, collator, cfg.train.dp.freeze_embeddings, cfg.train.dp.max_chunks_per_user,
                           parameters=parameters)
    agreement = norms.pop("agreement")
    found = {unit: quantiles(values) for unit, values in norms.items()}
    print(f"gradient norms of the warm-started model on {len(members)} tuning users ({len(norms['chunk'])} chunks; "
          f"users summed over up to {cfg.train.dp.max_chunks_per_user or 'all'} chunks), parameters trained under DP "
          f"(train.dp.parameters={parameters}): {sum(p.numel() for p in model.parameters() if p.requires_grad):,}")
    for unit, cuts in found.items():
        print(f"  {unit}: " + ", ".join(f"q{round(q * 100)} {value:.3g}" for q, value in cuts.items()))
    print(f"  users' agreement: {agreement:.3f} (at random about {len(members) ** -0.5:.3f})")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe", default="dp-user", help="the DP recipe to tune (dp-user: user level; dp: chunk level)")
    parser.add_argument("--users", type=int, default=320, help="synthetic tuning users (seed -2)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--epsilon", type=float, default=8.0)
    parser.add_argument("--batches", type=int, nargs="+", default=[32, 96],
                        help="expected logical batches (users under unit=user, chunks under unit=chunk)")
    parser.add_argument("--lrs", type=float, nargs="+", default=[1e-4, 3e-4, 1e-3])
    parser.add_argument("--parameters", nargs="+", default=["all"], choices=TRAINED_PARAMETERS,
                        help="what DP-SGD trains (train.dp.parameters); C is measured for each")
    parser.add_argument("--clip-quantile", type=float, default=0.5, choices=QUANTILES,
                        help="C = this quantile of the unit's gradient norms")
    parser.add_argument("--clip", type=float, help="C itself (skips the norm measurement)")
    parser.add_argument("--norm-users", type=int, default=24, help="tuning members whose gradients are measured")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "dp-sweep")
    parser.add_argument("--set", nargs="*", default=[], help="Hydra overrides for every run")
    args = parser.parse_args()

    corpus = tuning_corpus(args.work / f"tuning-{args.users}.jsonl", args.users)
    print(f"tuning corpus: {args.users} synthetic clinical users drawn with the reserved seed {TUNING_SYNTH_SEED}", flush=True)
    unit = RunConfig.from_config(compose_config([f"recipe={args.recipe}"])).train.dp.unit
    clips = {}
    for parameters in args.parameters:
        clips[parameters] = args.clip or measure_norms(args, corpus, parameters)[unit][args.clip_quantile]
        print(f"C = {clips[parameters]:.3g} (unit {unit}, train.dp.parameters={parameters})", flush=True)

    # utility is read from the audit's own pass; the every-occurrence privacy probe adds nothing to it
    common = [f"data.path={corpus}", f"train.epochs={args.epochs}", f"seed={args.seed}", "audit.reference=none",
              "audit.neighbours=0", "audit.inversion.enabled=false", "audit.privacy_probe=sampled",
              "model.warm_start=public", *args.set]
    results = {}
    plain = args.work / f"{args.recipe}-no-dp-e{args.epochs}"
    train("no DP", [f"recipe={args.recipe}", "train.dp.enabled=false", "train.batch_size=8", "train.lr=1e-4", *common],
          plain, args.epochs)
    results["no DP (batch 8, lr 1e-4)"] = figures(plain)
    for parameters, clip in clips.items():
        for batch in args.batches:
            for lr in args.lrs:
                name = f"{args.recipe}-{parameters}-b{batch}-lr{lr:g}-c{clip:.3g}-e{args.epsilon:g}-epochs{args.epochs}"
                train(name, [f"recipe={args.recipe}", f"train.dp.parameters={parameters}", f"train.batch_size={batch}",
                             f"train.lr={lr}", f"train.dp.max_grad_norm={clip:.4g}",
                             f"train.dp.target_epsilon={args.epsilon}", *common], args.work / name, args.epochs)
                results[f"DP {parameters}, batch {batch}, lr {lr:g}, C {clip:.3g}"] = figures(args.work / name)
    base = warm_start_utility(plain)
    print(f"\nutility on the held-out tuning users after {args.epochs} epochs (warm start alone: {number(base)}):")
    print("| run | utility [95% interval] | ε RDP | σ | q | steps | train s |\n|---|---:|---:|---:|---:|---:|---:|")
    for name, f in results.items():
        interval = f.get("utility_ci") or [None, None]
        print(f"| {name} | {number(f['utility'])} [{number(interval[0])}, {number(interval[1])}] | "
              f"{number((f['epsilon'] or {}).get('rdp'), 2)} | {number(f['noise_multiplier'])} | "
              f"{number(f['sample_rate'], 4)} | {f['steps'] or '-'} | {f['train_seconds']:.0f} |")
    best = max((name for name in results if name.startswith("DP")), key=lambda name: results[name]["utility"] or 0)
    print(f"best: {best}")
    ratio = (results[best]["utility"] or 0) / max(results["no DP (batch 8, lr 1e-4)"]["utility"] or 0, 1e-9)
    print(f"dp_sweep_utility_ratio: {ratio:.3f}")


if __name__ == "__main__":
    main()
