"""Utility of patient-level DP against the same recipe without DP, on a realistic synthetic corpus and on public text
grouped into pseudo-users, over several seeds.

Corpora (`--corpora`):

- `synth`: `ppmlm synth --users 320` (the realistic synthetic clinical corpus, seed 0), 192 training users;
- `abstracts`: the Medical Abstracts corpus (../shared/data/medical_abstracts, Schopf et al. 2023) has no authors or
  patients, so its abstracts are grouped into pseudo-users: `--documents` abstracts drawn with seed 42, and within
  each condition class a seeded shuffle cut into users of 1 to 2 x `--notes-per-user` - 1 abstracts (sizes drawn
  uniformly: `--notes-per-user` on average), so users have uneven numbers of documents on one topic, as patients
  have notes. The public warm start, which reads the same file, leaves these abstracts out (they are documents of
  the run's corpus), so it never saw the members or non-members;
- `embedded`: the embedded default of `python train.py` (24 patients, 14 trained on).

Runs of `train.py` on each corpus and seed (`--seeds`; the seed splits the users and draws masks, batches and
noise), same model and epochs, PPMLM masking, all from the public warm start (model.warm_start=public):

- `ppmlm`: no DP, the recipe's own batch and learning rate (the utility to keep);
- `ppmlm + DP user ε=E` for each `--epsilons` E: `recipe=dp-user` (its defaults: docs/dp.md), ε = E for all of a
  user's documents;
- with `--chunk-level`, `ppmlm + DP chunk ε=8`: `recipe=dp masking.variant=ppmlm`, ε per chunk, and the group bound
  it gives the user with most chunks;
- with `--cold`, `ppmlm, no warm start`: the same recipe from the encoder's fresh MLM head (model.warm_start=none),
  what the warm start adds to a plain recipe.

Each run is audited after every epoch without a reference model (`audit.reference=none`) and with the sampled privacy
probe (`audit.privacy_probe=sampled`: the utility does not depend on it); the tables read the last
epoch: utility is the audit's masked whole-word accuracy on the held-out (non-member) users, with its bootstrap
interval over users. The warm start alone is audited on the same split (no private training: what DP has to keep).
Over seeds: the mean and a 95% t-interval (n - 1 degrees of freedom) of each run's utility and of the ratio DP /
no DP per seed.

    python bench/dp_utility.py [--corpora synth abstracts] [--seeds 42 43 44] [--epsilons 8 3] [--epochs 2]
                               [--synth-users 320] [--documents 600] [--notes-per-user 6] [--chunk-level] [--cold]
                               [--set KEY=VALUE ...] [--jobs N]

With `--jobs N` the (corpus, seed) pairs run in N processes side by side, each logging to --work/jobs/: one GPU
holds several (docs/dp.md's table of the defaults: 6 pairs on one H100 in about 6 minutes); on a few CPU cores keep 1.

Runs live under --work (default runs/dp-utility/); a finished run is reused. The last line is
`dp_utility_ratio: X`: user-level DP at the first ε over no DP, the mean over seeds, on the corpus where it is lowest
(`n/a` where the plain recipe predicted nothing at some seed of every corpus).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf
from scipy import stats

from ppmlm.pipeline import compose_config
from ppmlm.rundir import RunDirectory, checkpoint_warm_start

ROOT = Path(__file__).resolve().parents[1]
ABSTRACTS = ROOT.parent / "shared" / "data" / "medical_abstracts" / "medical_tc_test.csv"
WARM = ["model.warm_start=public"]


def pseudo_user_corpus(source: Path, out: Path, documents: int, notes_per_user: int, seed: int) -> dict:
    """Writes the abstracts as a JSONL corpus of pseudo-users (see the module's docstring); returns its counts."""
    with source.open(newline="") as handle:
        rows = [(row["condition_label"], row["medical_abstract"]) for row in csv.DictReader(handle)]
    rng = np.random.default_rng(seed)
    chosen = [rows[i] for i in rng.permutation(len(rows))[:documents]]
    records, sizes = [], []
    for label in sorted({label for label, _ in chosen}):
        texts = [text for lab, text in chosen if lab == label]
        start = 0
        while start < len(texts):
            size = int(rng.integers(1, 2 * notes_per_user))
            user = f"class{label}-user{len(sizes)}"
            records += [{"user_id": user, "doc_id": f"{user}-note{i}", "text": text}
                        for i, text in enumerate(texts[start : start + size])]
            sizes.append(min(size, len(texts) - start))
            start += size
    text = "".join(json.dumps(record) + "\n" for record in records)
    if out.exists():  # same settings write the same file, once: --jobs processes read it while others start
        if out.read_text() != text:
            sys.exit(f"bench/dp_utility.py: {out} exists and is not this corpus: move it or choose another --work")
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(f".{out.name}.{os.getpid()}.partial")
        partial.write_text(text)
        os.replace(partial, out)
    return {"documents": len(records), "users": len(sizes), "documents_per_user": [min(sizes), float(np.mean(sizes)), max(sizes)]}


def synth_corpus(out: Path, users: int) -> Path:
    """`ppmlm synth --users N` as a user runs it (seed 0), written once."""
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "ppmlm", "synth", "--users", str(users), "--out", str(out)], cwd=ROOT,
                       check=True)
    return out


def train(name: str, overrides: list[str], directory: Path, epochs: int) -> None:
    if RunDirectory(directory).audit_of(epochs).exists():
        print(f"{name}: done already ({directory})", flush=True)
        return
    log = directory.with_name(f"{directory.name}.log")  # beside the run: ppmlm claims its directory whole
    log.parent.mkdir(parents=True, exist_ok=True)
    print(f"{name}: training ({log})", flush=True)
    with log.open("a") as handle:
        done = subprocess.run([sys.executable, str(ROOT / "train.py"), *overrides, f"output_dir={directory}"], cwd=ROOT,
                              stdout=handle, stderr=subprocess.STDOUT, env=dict(os.environ, TOKENIZERS_PARALLELISM="false"))
    if done.returncode != 0:
        sys.exit(f"bench/dp_utility.py: {name} failed (exit {done.returncode}); see {log}")


def figures(directory: Path) -> dict:
    """Utility (with its interval), the loss attack and ε with its unit, from the run's last epoch."""
    run = RunDirectory(directory)
    epoch = run.complete_epochs()[-1]
    audit = json.loads(run.audit_of(epoch).read_text())
    ends = [json.loads(line) for line in run.metrics.read_text().splitlines() if '"epoch_end"' in line]
    end = ends[-1]
    privacy = end.get("privacy") or {}
    return {"epoch": epoch, "utility": audit["utility"]["masked_word_accuracy"],
            "utility_ci": audit["utility"].get("masked_word_accuracy_ci"),
            "member_utility": audit["utility"].get("member_masked_word_accuracy"),
            "loss_auc": ((audit["attacks"].get("loss") or {}).get("user") or {}).get("auc"),
            "epsilon": end.get("epsilon"), "unit": privacy.get("unit"), "group": privacy.get("group"),
            "noise_multiplier": privacy.get("noise_multiplier"), "sample_rate": privacy.get("sample_rate"),
            "max_grad_norm": privacy.get("max_grad_norm"), "expected_batch": privacy.get("expected_batch_size"),
            "steps": privacy.get("steps") or sum(e["steps"] for e in ends),
            "train_seconds": sum(e["train_seconds"] for e in ends)}


def warm_start_utility(directory: Path) -> float | None:
    """The audit's utility of the public warm start the run started from, alone (no private training), on the run's
    split, blacklist and audit settings: what the private training starts from. Written beside the run."""
    from transformers import AutoTokenizer

    from ppmlm.audit.checkpoint import audit_checkpoint
    from ppmlm.audit.command import training_blacklist
    from ppmlm.config import RunConfig
    from ppmlm.corpus.canaries import recorded_canaries
    from ppmlm.corpus.loading import load_run_corpus
    from ppmlm.corpus.split import UserSplit
    from ppmlm.identifiers.blacklist import Blacklist

    run = RunDirectory(directory)
    out = directory.with_name(f"{directory.name}.warm-start-audit")
    if (out / "epoch-0.json").exists():
        return json.loads((out / "epoch-0.json").read_text())["utility"]["masked_word_accuracy"]
    record = checkpoint_warm_start(run.checkpoint(run.complete_epochs()[-1]))
    if record is None:
        return None
    config = OmegaConf.load(run.config)
    cfg = RunConfig.from_config(config)
    entry = Path(cfg.model.public.cache_dir) / record["key"]
    if not entry.is_absolute():
        entry = ROOT / entry
    corpus, split = load_run_corpus(cfg.data, cfg.seed), UserSplit.load(run.split)
    blacklist = Blacklist.load(training_blacklist(config, corpus, split, AutoTokenizer.from_pretrained(str(entry)),
                                                  recorded_canaries(run.path)))
    return audit_checkpoint(entry, corpus, split, blacklist, out, 0, cfg.audit.settings)["utility"]["masked_word_accuracy"]


def number(value, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def mean_interval(values: list[float]) -> tuple[float, float, float]:
    """Mean and 95% t-interval over seeds (the interval is the mean itself for one seed)."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, mean, mean
    half = stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5
    return mean, mean - half, mean + half


def ratio_over_plain(values: list[float], plain: list[float]) -> tuple[float, float, float] | None:
    """Mean and t-interval over seeds of a run's utility over the plain recipe's; None where the plain recipe predicts
    nothing at some seed (a ratio over 0 says nothing about what DP kept)."""
    if not all(plain):
        return None
    return mean_interval([v / p for v, p in zip(values, plain)])


def runs_of(args) -> dict[str, list[str]]:
    runs = {"ppmlm": ["recipe=ppmlm", *WARM]}
    for epsilon in args.epsilons:
        runs[f"ppmlm + DP user ε={epsilon:g}"] = ["recipe=dp-user", f"train.dp.target_epsilon={epsilon}", *WARM]
    if args.chunk_level:
        runs["ppmlm + DP chunk ε=8"] = ["recipe=dp", "masking.variant=ppmlm", *WARM]
    if args.cold:
        runs["ppmlm, no warm start"] = ["recipe=ppmlm", "model.warm_start=none"]
    return runs


def seed_table(results: dict) -> list[str]:
    rows = ["| run | seed | unit of ε | ε RDP / PRV | σ | C | expected batch | q | steps | utility [interval over users] "
            "| members | loss MIA user AUC | train s |", "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (name, seed), f in results.items():
        eps = f["epsilon"]
        ci = f["utility_ci"] or [None, None]
        rows.append(f"| {name} | {seed} | {f['unit'] or '-'} | "
                    f"{(number(eps.get('rdp'), 2) + ' / ' + number(eps.get('prv'), 2)) if eps else '-'} | "
                    f"{number(f['noise_multiplier'])} | {number(f['max_grad_norm'], 3)} | {number(f['expected_batch'], 1)} | "
                    f"{number(f['sample_rate'], 4)} | {f['steps'] or '-'} | {number(f['utility'])} "
                    f"[{number(ci[0])}, {number(ci[1])}] | {number(f['member_utility'])} | {number(f['loss_auc'], 2)} "
                    f"| {f['train_seconds']:.0f} |")
    return rows


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", nargs="+", choices=["synth", "abstracts", "embedded"], default=["synth", "abstracts"])
    parser.add_argument("--abstracts", type=Path, default=ABSTRACTS)
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "dp-utility")
    parser.add_argument("--synth-users", type=int, default=320)
    parser.add_argument("--documents", type=int, default=600, help="abstracts drawn (seeded) from the corpus")
    parser.add_argument("--notes-per-user", type=int, default=6, help="mean abstracts per pseudo-user")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 43, 44])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[8.0, 3.0], help="target user-level ε of the DP runs")
    parser.add_argument("--chunk-level", action="store_true", help="also chunk-level DP at ε 8")
    parser.add_argument("--cold", action="store_true", help="also the plain recipe without the warm start")
    parser.add_argument("--set", nargs="*", default=[], help="Hydra overrides for every run, e.g. train.max_length=128")
    parser.add_argument("--jobs", type=int, default=1,
                        help="(corpus, seed) pairs run side by side in this many processes: one GPU holds several")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: at least 1")
    return args


def job_argv(args: argparse.Namespace, corpus: str, seed: int) -> list[str]:
    """The arguments of the process that runs one (corpus, seed) pair of `args`, into the same --work."""
    argv = ["--corpora", corpus, "--seeds", str(seed), "--work", str(args.work), "--abstracts", str(args.abstracts),
            "--synth-users", str(args.synth_users), "--documents", str(args.documents),
            "--notes-per-user", str(args.notes_per_user), "--epochs", str(args.epochs),
            "--epsilons", *[f"{e:g}" for e in args.epsilons]]
    argv += ["--chunk-level"] * args.chunk_level + ["--cold"] * args.cold
    return argv + (["--set", *args.set] if args.set else [])


def run_jobs(args: argparse.Namespace, corpora: list[str]) -> None:
    """Every (corpus, seed) pair in its own process, `args.jobs` at a time; the first run of a corpus builds its warm
    start under the cache's lock while the others wait for it. The caller then reads the finished runs."""
    pairs = [(corpus, seed) for corpus in corpora for seed in args.seeds]
    logs = args.work / "jobs"
    logs.mkdir(parents=True, exist_ok=True)

    def one(pair: tuple[str, int]) -> tuple[tuple[str, int], int, Path]:
        log = logs / f"{pair[0]}-seed{pair[1]}.log"
        print(f"{pair[0]} seed {pair[1]}: in its own process ({log})", flush=True)
        with log.open("a") as handle:
            done = subprocess.run([sys.executable, str(Path(__file__).resolve()), *job_argv(args, *pair)], cwd=ROOT,
                                  stdout=handle, stderr=subprocess.STDOUT)
        return pair, done.returncode, log

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        failed = [(pair, log) for pair, code, log in pool.map(one, pairs) if code != 0]
    if failed:
        sys.exit("bench/dp_utility.py: " + "; ".join(f"{c} seed {s} failed, see {log}" for (c, s), log in failed))


def main() -> None:
    args = parse_args()

    corpora = {}
    if "synth" in args.corpora:
        path = synth_corpus(args.work / f"synth-{args.synth_users}.jsonl", args.synth_users)
        corpora["synth"] = [f"data.path={path}"]
        print(f"synth: ppmlm synth --users {args.synth_users}, {args.epochs} epochs", flush=True)
    if "abstracts" in args.corpora:
        if not args.abstracts.is_file():
            sys.exit(f"bench/dp_utility.py: {args.abstracts} not found (the public data of ../shared/data)")
        corpus = args.work / "abstracts-pseudo-users.jsonl"
        counts = pseudo_user_corpus(args.abstracts, corpus, args.documents, args.notes_per_user, 42)
        print(f"abstracts: {counts['documents']} abstracts in {counts['users']} pseudo-users "
              f"({counts['documents_per_user'][0]} to {counts['documents_per_user'][2]} each, mean "
              f"{counts['documents_per_user'][1]:.1f}), {args.epochs} epochs", flush=True)
        corpora["abstracts"] = [f"data.path={corpus}"]
    if "embedded" in args.corpora:
        corpora["embedded"] = [f"data.synth_users={compose_config([]).data.synth_users}"]
    if args.jobs > 1 and len(corpora) * len(args.seeds) > 1:
        run_jobs(args, list(corpora))
    # utility is read from the audit's own pass; the every-occurrence privacy probe (minutes per audit) adds nothing to it
    common = [f"train.epochs={args.epochs}", "audit.reference=none", "audit.neighbours=0", "audit.inversion.enabled=false",
              "audit.privacy_probe=sampled", *args.set]
    runs = runs_of(args)
    first = f"ppmlm + DP user ε={args.epsilons[0]:g}"
    ratios = {}
    for corpus_name, overrides in corpora.items():
        results, warm = {}, {}
        for seed in args.seeds:
            for name, recipe in runs.items():
                slug = name.replace("+", "").replace(",", "").replace(" ", "-").replace("=", "").replace("ε", "eps")
                directory = args.work / corpus_name / f"{slug}-seed{seed}"
                train(f"{corpus_name} {name} seed {seed}", [*overrides, f"seed={seed}", *common, *recipe], directory,
                      args.epochs)
                results[name, seed] = figures(directory)
                if name == "ppmlm":
                    warm[seed] = warm_start_utility(directory)
        print(f"\n{corpus_name}, {args.epochs} epochs, per seed:\n" + "\n".join(seed_table(results)), flush=True)
        print(f"\n{corpus_name}, over seeds {', '.join(map(str, args.seeds))} (mean [95% t-interval]):")
        print("| run | utility | over ppmlm (no DP, warm start) |\n|---|---:|---:|")
        rows = {"public warm start alone": {s: warm[s] for s in args.seeds if warm[s] is not None}}
        rows.update({name: {s: results[name, s]["utility"] for s in args.seeds} for name in runs})
        for name, by_seed in rows.items():
            if not by_seed:
                continue
            m, low, high = mean_interval(list(by_seed.values()))
            ratio = "-"
            if name != "ppmlm":
                over = ratio_over_plain(list(by_seed.values()), [results["ppmlm", s]["utility"] for s in by_seed])
                ratio = ("n/a (ppmlm predicts nothing at a seed)" if over is None
                         else f"{over[0]:.2f} [{over[1]:.2f}, {over[2]:.2f}]")
                if name == first and over is not None:
                    ratios[corpus_name] = over[0]
            print(f"| {name} | {m:.3f} [{low:.3f}, {high:.3f}] | {ratio} |")
    if ratios:
        worst = min(ratios, key=ratios.get)
        print(f"\nlowest on {worst}")
        print(f"dp_utility_ratio: {ratios[worst]:.3f}")
    else:
        print("\nthe plain recipe predicted nothing at some seed of every corpus: no ratio")
        print("dp_utility_ratio: n/a")


if __name__ == "__main__":
    main()
