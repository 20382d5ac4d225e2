"""Reproduce the paper's privacy-utility comparison (Boutet et al. 2025, section 5 and appendices A-D).

Trains every recipe (mlm, mlma, ppmlm, dppmlm, ippmlm, dp, ppmlm+dp, and ppmlm with user-level DP) on the same
corpus, seed and model, each audited after every epoch against one shared likelihood-ratio reference (plain MLM
trained on the population users, so every recipe faces the same attacker) with every attack of the audit; sweeps
ppmlm over k and n; repeats the comparison on a second domain (the legal synthetic corpus); with --long-epochs,
trains some recipes longer (on the first domain, or on --long-domains) and reports every attack at both epochs and
which is strongest;
then writes docs/results.md with its tables, plots under docs/results/ and one raw JSON per run under
docs/results/runs/ (figures only: no terms, no user ids).

    python bench/results.py                      # the default: sized for under an hour on 2 CPU cores
    python bench/results.py --canaries --long-epochs 12   # what docs/results.md shows (about 5 hours on 2 cores)
    python bench/results.py --canaries --long-epochs 12 --long-domains clinical legal \
        --long-recipes mlm mlma ppmlm dppmlm ippmlm dp ppmlm+dp ppmlm+dp-user   # every recipe at 4 and 12 epochs on
                                                                                # both domains (about 13 hours)
    python bench/results.py --report-only        # rewrite docs/results.md from finished runs
    python bench/results.py --epochs 32 --users 900 --sweep grid \\
        --set train.max_length=512 model.name_or_path=/models/roberta-large \\
        --launcher "accelerate launch --multi_gpu --num_processes 8"   # paper settings on GPUs

With `--jobs N` the reference models, then the runs, train N at a time in separate processes: one GPU holds several
of these small runs (on a few CPU cores keep 1). The longer runs still start last.

Runs live under --work (default runs/results/); a finished run (its last epoch audited) is reused, an
interrupted one resumes, so the command can be stopped and started again.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from ppmlm.rundir import RunDirectory  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RECIPES = {
    "mlm": ["recipe=mlm"],
    "ppmlm": ["recipe=ppmlm"],
    "mlma": ["recipe=mlma"],
    "dppmlm": ["recipe=dppmlm"],
    "ippmlm": ["recipe=ippmlm"],
    "dp": ["recipe=dp"],
    "ppmlm+dp": ["recipe=ppmlm", "train.dp.enabled=true"],
    "ppmlm+dp-user": ["recipe=dp-user"],  # user-level DP (docs/dp.md): epsilon per patient, at the same target
}
LEVELS = ("0.001", "0.01", "0.1")


@dataclass
class Run:
    domain: str
    name: str
    overrides: list[str]
    directory: Path
    epochs: int
    sweep: tuple[int, int] | None = None  # (k, n) of a ppmlm sweep point
    record: dict = field(default_factory=dict)


def plan_runs(args) -> tuple[list[Run], list[Run]]:
    """The reference models, then every run of the comparison and the sweeps, then the longer runs."""
    references, runs = [], []
    for domain in args.domains:
        for epochs, work, recipes in [(args.epochs, args.work / domain, args.recipes),
                                      *([(args.long_epochs, args.work / f"{domain}-{args.long_epochs}-epochs", args.long_recipes)]
                                        if args.long_epochs and domain in long_domains(args) else [])]:
            base = [f"seed={args.seed}", f"train.epochs={epochs}", f"data.synth_users={args.users}",
                    f"data.synth_domain={domain}", *args.set]
            references.append(Run(domain, "reference", [*base, "recipe=mlm", "data.train_users=population",
                                                        "audit.enabled=false"], work / "reference", epochs))
            audited = [*base, "audit.enabled=true", f"audit.max_users_per_side={args.audit_users}",
                       f"audit.max_chunks_per_user={args.audit_chunks}",
                       *(["audit.canaries.enabled=true"] if args.canaries else []),  # else auto: one-run canaries under DP
                       f"audit.reference={work / 'reference' / 'checkpoints' / f'epoch-{epochs}'}"]
            for name in recipes:
                runs.append(Run(domain, name, [*audited, *RECIPES[name]], work / name.replace("+", "-"), epochs))
            if domain == args.domains[0] and epochs == args.epochs:
                for k, n in sweep_points(args):
                    overrides = [*audited, "recipe=ppmlm", f"blacklist.k={k}", f"blacklist.n={n}"]
                    runs.append(Run(domain, f"ppmlm k={k} n={n}", overrides, work / f"ppmlm-k{k}-n{n}", epochs, (k, n)))
    # the longer runs last: a command stopped early has the comparison of every recipe on every corpus first
    return references, sorted(runs, key=lambda run: run.epochs != args.epochs)


def long_domains(args) -> list[str]:
    """The domains of the --long-epochs runs: --long-domains, or the first of --domains."""
    return [d for d in args.domains if d in (args.long_domains or args.domains[:1])]


def sweep_points(args) -> list[tuple[int, int]]:
    """k at n=1 (appendix B) and n at k=2 (appendix C), or their whole grid; (2, 1) is the main ppmlm run."""
    if args.sweep == "none":
        return []
    if args.sweep == "grid":
        points = [(k, n) for k in args.k for n in args.n]
    else:
        points = [(k, 1) for k in args.k] + [(2, n) for n in args.n]
    return [p for p in dict.fromkeys(points) if p != (2, 1)]


def finished(run: Run) -> bool:
    directory = RunDirectory(run.directory)
    if run.name == "reference":
        return run.epochs in directory.complete_epochs()
    return directory.audit_of(run.epochs).exists()


MACHINES = "machines.json"  # in --work: the machine that trained each run, which the report's Setup names
_machines_lock = threading.Lock()


def this_machine(jobs: int) -> str:
    gpu = gpu_name()
    return f"{os.cpu_count()} CPU cores" + (f", {gpu}" if gpu else "") + (f", {jobs} runs side by side" if jobs > 1 else "")


def record_machine(work: Path, run: Run, machine: str) -> None:
    path = work / MACHINES
    with _machines_lock:
        machines = json.loads(path.read_text()) if path.exists() else {}
        machines[str(run.directory.relative_to(work))] = machine
        partial = path.with_suffix(".json.partial")
        partial.write_text(json.dumps(machines, indent=1, sort_keys=True))
        partial.replace(path)


def machines_of(work: Path, runs: list[Run]) -> str:
    """The machines that trained `runs`, with how many each (a --report-only run may be on another machine)."""
    path = work / MACHINES
    machines = json.loads(path.read_text()) if path.exists() else {}
    counts = Counter(machines.get(str(run.directory.relative_to(work)), "not recorded") for run in runs)
    return "; ".join(f"{machine} ({count} run{'s' * (count != 1)})" for machine, count in counts.most_common())


def train(run: Run, launcher: list[str]) -> str | None:
    """Runs train.py for one configuration (resuming it if it was interrupted); its output goes to <run>.log beside it.
    Returns what failed, or None."""
    if finished(run):
        print(f"[{run.domain}] {run.name}: done already ({run.directory})", flush=True)
        return None
    log_path = run.directory.with_name(f"{run.directory.name}.log")  # beside the run: ppmlm claims its directory whole
    log_path.parent.mkdir(parents=True, exist_ok=True)
    command = [*launcher, str(ROOT / "train.py"), *run.overrides, f"output_dir={run.directory}"]
    print(f"[{run.domain}] {run.name}: training ({log_path})", flush=True)
    with log_path.open("a") as log:
        done = subprocess.run(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                              env=dict(os.environ, TOKENIZERS_PARALLELISM="false"))
    if done.returncode != 0:
        return f"{run.domain} {run.name} failed (exit {done.returncode}); see {log_path}"
    print(f"[{run.domain}] {run.name}: done", flush=True)
    return None


def train_all(runs: list[Run], launcher: list[str], jobs: int, work: Path) -> None:
    """Trains `runs` in order, `jobs` at a time, and records the machine of each; after a failure no further run
    starts, and the command exits once the running ones end."""
    failures: list[str] = []
    failed = threading.Event()
    machine = this_machine(jobs)

    def one(run: Run) -> None:
        if failed.is_set():
            return
        trained_now = not finished(run)
        failure = train(run, launcher)
        if failure:
            failures.append(failure)
            failed.set()
        elif trained_now:
            record_machine(work, run, machine)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, runs))
    if failures:
        sys.exit("bench/results.py: " + "; ".join(failures))


def collect(run: Run) -> dict:
    """The run's figures per epoch, from its audit JSON and metrics.jsonl: what docs/results.md shows."""
    directory = RunDirectory(run.directory)
    ends = {line["epoch"]: line for line in map(json.loads, directory.metrics.read_text().splitlines())
            if line.get("event") == "epoch_end"}
    epochs = []
    for epoch in sorted(ends):
        audit = json.loads(directory.audit_of(epoch).read_text())
        for private in ("model", "reference"):
            audit.pop(private, None)  # local paths
        epochs.append({"epoch": epoch, "train_seconds": ends[epoch].get("train_seconds"),
                       "epsilon": ends[epoch].get("epsilon"), **audit})
    blacklist = json.loads(directory.blacklist_summary.read_text())
    config = OmegaConf.load(directory.config)
    # from the resolved config (written once data and blacklist are ready) to the last audit
    wall = directory.audit_of(epochs[-1]["epoch"]).stat().st_mtime - directory.config.stat().st_mtime
    settings = {"model": config.model.name_or_path, **{key: config.train[key] for key in
                ("epochs", "batch_size", "max_length", "lr", "head_lr")}, "dp": config.train.dp.enabled}
    return {"domain": run.domain, "run": run.name, "sweep": run.sweep, "overrides": run.overrides,
            "settings": settings, "wall_seconds": round(wall, 1), "blacklist": blacklist, "epochs": epochs}


# --- report -------------------------------------------------------------------------------------------

def at(record: dict, epoch: int | None = None) -> dict:
    """The figures of epoch `epoch` of a run (None: its last)."""
    return record["epochs"][-1] if epoch is None else next(e for e in record["epochs"] if e["epoch"] == epoch)


def attack(epoch: dict, name: str, level: str = "user") -> dict:
    return (epoch["attacks"].get(name) or {}).get(level) or {}


def number(value, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def tpr(figures: dict, at: str = "0.01") -> str:
    return number((figures.get("tpr_at_fpr") or {}).get(at), 2)


def main_table(records: list[dict], epoch: int | None = None) -> list[str]:
    rows = ["| recipe | utility | privacy | direct | indirect | identifier MIA AUC | TPR@0.1% | TPR@1% | TPR@10% "
            "| loss AUC s / u | loss TPR@1% s / u | LR AUC s / u | LR TPR@1% s / u | RMIA AUC s / u | RMIA TPR@1% s / u "
            "| NB AUC s / u | NB TPR@1% s / u | ε (RDP / PRV) | one-run ε ≥ | train s | run min |",
            "|---|" + "---:|" * 20]
    for record in records:
        last = at(record, epoch)
        privacy, ident = last["privacy"], attack(last, "identifier_count")
        loss_s, loss_u = attack(last, "loss", "sample"), attack(last, "loss")
        lr_s, lr_u = attack(last, "likelihood_ratio", "sample"), attack(last, "likelihood_ratio")
        rmia_s, rmia_u = attack(last, "rmia", "sample"), attack(last, "rmia")
        nb_s, nb_u = attack(last, "neighbourhood", "sample"), attack(last, "neighbourhood")
        eps = last.get("epsilon")
        minutes = f"{record['wall_seconds'] / 60:.1f}" if last is record["epochs"][-1] else "-"  # the whole run's
        rows.append(
            f"| {record['run']} | {number(last['utility']['masked_word_accuracy'])} | {number(privacy['score'], 4)} "
            f"| {number(privacy['direct']['score'], 4)} | {number(privacy['indirect']['score'], 4)} "
            f"| {number(ident.get('auc'), 2)} | {tpr(ident, '0.001')} | {tpr(ident)} | {tpr(ident, '0.1')} "
            f"| {number(loss_s.get('auc'), 2)} / {number(loss_u.get('auc'), 2)} | {tpr(loss_s)} / {tpr(loss_u)} "
            f"| {number(lr_s.get('auc'), 2)} / {number(lr_u.get('auc'), 2)} | {tpr(lr_s)} / {tpr(lr_u)} "
            f"| {number(rmia_s.get('auc'), 2)} / {number(rmia_u.get('auc'), 2)} | {tpr(rmia_s)} / {tpr(rmia_u)} "
            f"| {number(nb_s.get('auc'), 2)} / {number(nb_u.get('auc'), 2)} | {tpr(nb_s)} / {tpr(nb_u)} "
            f"| {(number(eps.get('rdp'), 2) + ' / ' + number(eps.get('prv'), 2)) if eps else '-'} "
            f"| {number((last.get('empirical_epsilon') or {}).get('epsilon'), 2) if last.get('empirical_epsilon') else '-'} "
            f"| {sum(e['train_seconds'] or 0 for e in record['epochs'] if e['epoch'] <= last['epoch']):.0f} "
            f"| {minutes} |")
    return rows


def probe_table(records: list[dict], epoch: int | None = None) -> list[str]:
    """The probing attacks of the last epoch: name -> attribute inversion and canary exposure (docs/audit.md)."""
    rows = ["| recipe | inversion members top-1 / 10 / 100 | non-members top-1 / 10 / 100 | candidates "
            "| canary exposure, bits (repetitions) |", "|---|---:|---:|---:|---:|"]
    for record in records:
        last = at(record, epoch)
        inversion, canaries = last.get("inversion") or {}, last.get("canaries") or {}
        sides = [" / ".join(number(((inversion.get(side) or {}).get(f"top_{top}") or {}).get("value"), 2) for top in (1, 10, 100))
                 for side in ("member", "non_member")]
        exposure = " / ".join(f"{row['exposure']:.1f} ({row['repetitions']})"
                              for row in sorted(canaries.get("canaries") or [], key=lambda row: row["repetitions"])) or "-"
        rows.append(f"| {record['run']} | {sides[0]} | {sides[1]} | {inversion.get('candidates', 'n/a')} | {exposure} |")
    return rows


ATTACK_NAMES = {"loss": "loss", "likelihood_ratio": "LR", "rmia": "RMIA", "neighbourhood": "NB",
                "identifier_count": "identifier count", "identifier_share": "identifier share"}


def lowest_resolved(figures: dict) -> tuple[str, float] | None:
    """(FPR level, TPR) at the lowest FPR level the audited non-members resolve, if any."""
    resolved = [(level, value) for level, value in (figures.get("tpr_at_fpr") or {}).items() if value is not None]
    return min(resolved, key=lambda item: float(item[0])) if resolved else None


def strongest_table(records: list[dict], epochs: list[int]) -> list[str]:
    """Per run and epoch, the attack with the highest AUC at each level and the one that finds most members at the
    lowest resolved FPR (sample level): which attack an auditor should read first."""
    rows = ["| recipe | epoch | highest sample AUC | highest user AUC | most members found at the lowest resolved FPR "
            "(sample level) |", "|---|---:|---|---|---|"]
    for record in records:
        for epoch in epochs:
            figures = at(record, epoch)
            cells = []
            for level in ("sample", "user"):
                scored = [(attack(figures, name, level).get("auc"), label) for name, label in ATTACK_NAMES.items()]
                scored = [(auc, label) for auc, label in scored if auc is not None]
                best = max(auc for auc, _ in scored) if scored else None
                cells.append(f"{', '.join(label for auc, label in scored if auc == best)} ({best:.2f})" if scored else "n/a")
            found = [(resolved, label) for name, label in ATTACK_NAMES.items()
                     if (resolved := lowest_resolved(attack(figures, name, "sample")))]
            if found:
                level = min(float(resolved[0]) for resolved, _ in found)
                at_level = [(resolved[1], label) for resolved, label in found if float(resolved[0]) == level]
                best = max(value for value, _ in at_level)
                cells.append(f"{', '.join(label for value, label in at_level if value == best)}: TPR {best:.2f} at FPR "
                             f"{level:g}")
            else:
                cells.append("no FPR level resolved")
            rows.append(f"| {record['run']} | {epoch} | " + " | ".join(cells) + " |")
    return rows


def plot_attacks(records: list[dict], path: Path, title: str) -> None:
    """Each membership attack's sample-level AUC (user level for the identifier attacks) over the epochs, per run."""
    figure, axes = plt.subplots(1, len(records), figsize=(4.2 * len(records), 3.8), sharey=True, squeeze=False)
    for ax, record in zip(axes[0], records):
        for name, label in ATTACK_NAMES.items():
            level = "user" if name.startswith("identifier") else "sample"
            points = [(e["epoch"], attack(e, name, level).get("auc")) for e in record["epochs"]]
            points = [(epoch, auc) for epoch, auc in points if auc is not None]
            if points:
                ax.plot(*zip(*points), "o-", markersize=3, label=f"{label} ({level})")
        ax.axhline(0.5, color="grey", linewidth=0.8, linestyle=":")
        ax.set(title=record["run"], xlabel="epoch", ylim=(0, 1.02))
    axes[0][0].set_ylabel("AUC (members vs audit non-members)")
    axes[0][-1].legend(fontsize=7)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def epochs_table(records: list[dict]) -> list[str]:
    epochs = [e["epoch"] for e in records[0]["epochs"]]
    rows = ["| recipe | " + " | ".join(f"epoch {e}: utility / privacy / identifier MIA AUC" for e in epochs) + " |",
            "|---|" + "---:|" * len(epochs)]
    for record in records:
        cells = [f"{number(e['utility']['masked_word_accuracy'])} / {number(e['privacy']['score'], 4)} / "
                 f"{number(attack(e, 'identifier_count').get('auc'), 2)}" for e in record["epochs"]]
        rows.append(f"| {record['run']} | " + " | ".join(cells) + " |")
    return rows


def sweep_table(records: list[dict]) -> list[str]:
    rows = ["| k | n | direct terms | indirect terms | blacklist terms | protected share of words | utility | privacy "
            "| identifier MIA AUC | TPR@1% |", "|---:|---:|" + "---:|" * 8]
    for record in sorted(records, key=lambda r: (r["blacklist"]["parameters"]["k"], r["blacklist"]["parameters"]["n"])):
        counts, params, last = record["blacklist"]["counts"], record["blacklist"]["parameters"], record["epochs"][-1]
        ident = attack(last, "identifier_count")
        rows.append(f"| {params['k']} | {params['n']} | {counts.get('direct_terms')} | {counts.get('indirect_terms')} "
                    f"| {counts.get('blacklist_terms')} | {number(counts.get('protected_share'))} "
                    f"| {number(last['utility']['masked_word_accuracy'])} | {number(last['privacy']['score'], 4)} "
                    f"| {number(ident.get('auc'), 2)} | {tpr(ident)} |")
    return rows


def plot_tradeoff(records: list[dict], path: Path, title: str) -> None:
    figure, (tradeoff, over_epochs) = plt.subplots(1, 2, figsize=(12, 4.5))
    for record in records:
        utility = [e["utility"]["masked_word_accuracy"] for e in record["epochs"]]
        privacy = [e["privacy"]["score"] for e in record["epochs"]]
        line, = tradeoff.plot(utility, privacy, "o-", label=record["run"])
        tradeoff.annotate(str(record["epochs"][-1]["epoch"]), (utility[-1], privacy[-1]), fontsize=7,
                          color=line.get_color(), xytext=(3, 3), textcoords="offset points")
        over_epochs.plot([e["epoch"] for e in record["epochs"]], privacy, "o-", label=record["run"])
    tradeoff.set(xlabel="utility (non-member masked word accuracy)", ylabel="privacy score", title=title)
    over_epochs.set(xlabel="epoch", ylabel="privacy score", title="privacy per epoch")
    tradeoff.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def plot_regurgitation(records: list[dict], path: Path, title: str) -> None:
    """Paper Figure 5: how often each leaked identifier was predicted against how often it occurs in training."""
    figure, ax = plt.subplots(figsize=(6.5, 4.5))
    for marker, record in zip("os^vDxP", records):
        regurgitation = record["epochs"][-1]["privacy"]["regurgitation"]
        if regurgitation["training_occurrences"]:
            ax.scatter(regurgitation["training_occurrences"], regurgitation["predictions"], marker=marker,
                       label=f"{record['run']} ({len(regurgitation['predictions'])} identifiers)", alpha=0.7)
    ax.set(xscale="log", yscale="log", xlabel="occurrences in the members' documents",
           ylabel="times predicted (all maskings of the audited chunks)", title=f"regurgitated identifiers, {title}")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def plot_sweep(records: list[dict], path: Path) -> None:
    figure, axes = plt.subplots(1, 3, figsize=(14, 4))
    for record in records:
        params, last = record["blacklist"]["parameters"], record["epochs"][-1]
        label = f"k={params['k']} n={params['n']}"
        axes[0].bar(label, record["blacklist"]["counts"].get("blacklist_terms") or 0)
        axes[1].bar(label, last["utility"]["masked_word_accuracy"] or 0)
        axes[2].bar(label, last["privacy"]["score"])
    for ax, title in zip(axes, ("blacklisted terms", "utility", "privacy score")):
        ax.set_title(title)
        ax.tick_params(axis="x", rotation=45, labelsize=8)
    axes[2].set_ylim(min(0.9, min(r["epochs"][-1]["privacy"]["score"] for r in records) - 0.01), 1.001)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def paper_checks(records: list[dict]) -> list[str]:
    """The paper's trends (section 5.3, 5.4, appendix A), each checked against our figures."""
    by_name = {r["run"]: r for r in records}
    last = {name: r["epochs"][-1] for name, r in by_name.items()}
    privacy = {name: e["privacy"]["score"] for name, e in last.items()}
    utility = {name: e["utility"]["masked_word_accuracy"] or 0.0 for name, e in last.items()}
    ident = {name: attack(e, "identifier_count") for name, e in last.items()}
    checks = []

    def check(claim: str, holds: bool | None, figures: str) -> None:
        verdict = "n/a" if holds is None else ("agrees" if holds else "**differs**")
        checks.append(f"| {claim} | {figures} | {verdict} |")

    def have(*names):
        return all(n in last for n in names)

    if have("mlm", "ppmlm"):
        check("PPMLM keeps privacy at about 0.99 or above", privacy["ppmlm"] >= 0.99, f"ppmlm {privacy['ppmlm']:.4f}")
        check("plain MLM leaks identifiers: privacy below PPMLM's", privacy["mlm"] < privacy["ppmlm"],
              f"mlm {privacy['mlm']:.4f} vs ppmlm {privacy['ppmlm']:.4f}")
        first, final = by_name["mlm"]["epochs"][0]["privacy"]["score"], privacy["mlm"]
        check("plain MLM's privacy falls as epochs go on", final < first, f"mlm epoch 1 {first:.4f} -> last {final:.4f}")
        check("PPMLM's utility stays close to MLM's (within 10% relative)",
              utility["ppmlm"] >= 0.9 * utility["mlm"], f"ppmlm {utility['ppmlm']:.3f} vs mlm {utility['mlm']:.3f}")
        mlm_tpr, pp_tpr = ident["mlm"].get("tpr_at_fpr", {}).get("0.01"), ident["ppmlm"].get("tpr_at_fpr", {}).get("0.01")
        check("identifier-count MIA: TPR at 1% FPR clearly above FPR for MLM, near zero for PPMLM",
              None if mlm_tpr is None or pp_tpr is None else (mlm_tpr > 0.05 and pp_tpr < mlm_tpr),
              f"mlm {number(mlm_tpr, 2)}, ppmlm {number(pp_tpr, 2)}; AUC mlm {number(ident['mlm'].get('auc'), 2)}, "
              f"ppmlm {number(ident['ppmlm'].get('auc'), 2)}; the attack reads indirect identifiers, of which mlm "
              f"predicted {last['mlm']['privacy']['indirect']['leaked']} of {last['mlm']['privacy']['indirect']['identifiers']} "
              f"(direct: {last['mlm']['privacy']['direct']['leaked']} of {last['mlm']['privacy']['direct']['identifiers']})")
    if have("mlm", "mlma", "ppmlm"):
        check("MLMA (pseudonymized text) is more private than MLM, less than PPMLM",
              privacy["mlm"] <= privacy["mlma"] <= privacy["ppmlm"],
              f"mlm {privacy['mlm']:.4f}, mlma {privacy['mlma']:.4f}, ppmlm {privacy['ppmlm']:.4f}")
        check("MLMA loses utility against MLM (identifiers gone from the context)", utility["mlma"] < utility["mlm"],
              f"mlma {utility['mlma']:.3f} vs mlm {utility['mlm']:.3f}")
    if have("mlm", "dp"):
        check("DP-SGD keeps privacy high (about 0.98) ...", privacy["dp"] >= 0.98, f"dp {privacy['dp']:.4f}")
        check("... but costs much utility", utility["dp"] < 0.8 * utility["mlm"],
              f"dp {utility['dp']:.3f} vs mlm {utility['mlm']:.3f}")
    if have("ppmlm", "ppmlm+dp-user"):
        check("ppmlm's own target, not the paper's (docs/dp.md): user-level DP keeps at least 70% of the utility of "
              "ppmlm without DP", utility["ppmlm+dp-user"] >= 0.7 * utility["ppmlm"],
              f"ppmlm+dp-user {utility['ppmlm+dp-user']:.3f} vs ppmlm {utility['ppmlm']:.3f} "
              f"({utility['ppmlm+dp-user'] / utility['ppmlm']:.2f})" if utility["ppmlm"] else "ppmlm predicts nothing")
    if have("dppmlm", "ppmlm"):
        dppmlm, ppmlm = last["dppmlm"]["privacy"]["indirect"]["score"], last["ppmlm"]["privacy"]["indirect"]["score"]
        check("DPPMLM (direct identifiers only) leaks indirect ones (appendix A)", dppmlm < ppmlm,
              f"indirect privacy: dppmlm {dppmlm:.4f} vs ppmlm {ppmlm:.4f}")
    if have("ippmlm", "ppmlm"):
        ippmlm, ppmlm = last["ippmlm"]["privacy"]["direct"]["score"], last["ppmlm"]["privacy"]["direct"]["score"]
        check("IPPMLM (indirect identifiers only) leaks direct ones (appendix A)", ippmlm < ppmlm,
              f"direct privacy: ippmlm {ippmlm:.4f} vs ppmlm {ppmlm:.4f}")
    return ["| the paper's trend | our figures (last epoch) | verdict |", "|---|---|---|", *checks]


def resolution(records: list[dict]) -> str:
    audited = records[0]["epochs"][-1]["audited"]
    users, samples = audited["non_member_users"], audited["non_member_samples"]
    return (f"{audited['member_users']} member and {users} audit non-member users ({audited['member_samples']} and "
            f"{samples} chunks), {audited['maskings_per_sample']} maskings per chunk. With {users} non-member users "
            f"({samples} chunks) the smallest non-zero false-positive rate is 1/{users} at user level "
            f"(1/{samples} at sample level): TPR at 0.1% and 1% FPR both read the share of members scored above "
            "every non-member, which a blind attack puts at about 1/(non-members + 1).")


def warm_start_lines(records: list[dict]) -> list[str]:
    """Which runs started from the public warm start, and what it saw: the audit records it (docs/training.md)."""
    warm = [r for r in records if (r["epochs"][0].get("warm_start") or {}).get("kind") == "public"]
    if not warm:
        return ["- Warm start: none; every run starts from the offline encoder with a fresh MLM head."]
    start = warm[0]["epochs"][0]["warm_start"]
    sources = ", ".join(f"{source['source']} ({source['documents']} documents)" for source in start.get("sources", []))
    accuracy = start.get("held_out_masked_token_accuracy") or {}
    names = sorted({r["run"] for r in warm})
    return [f"- Warm start (`model.warm_start: auto`): {', '.join(names)} start from the public warm start: "
            f"{start.get('trained')} trained without DP for {start.get('steps')} steps on public text only ({sources}); "
            f"masked-token accuracy on its held-out public documents {number(accuracy.get('before'))} before, "
            f"{number(accuracy.get('after'))} after. The other runs start from the offline encoder with a fresh MLM head.",
            *(["- The warm start's synthetic patients draw names and places from the lists the corpora's patients are drawn "
               "from: identifiers it predicts before any private step count against the runs that start from it "
               "(docs/dp.md, *The warm start in docs/results.md*)."]
              if any(source["source"].startswith("synthetic") for source in start.get("sources", [])) else [])]


def dp_settings_table(records: list[dict]) -> list[str]:
    """The DP runs' unit, σ, C and batch as the audit recorded them: what their ε rests on."""
    rows = [(r, r["epochs"][-1].get("dp_settings")) for r in records if r["epochs"][-1].get("dp_settings")]
    if not rows:
        return []
    table = ["DP settings of the DP runs (from each run's audit; ε is per unit, docs/dp.md):", "",
             "| corpus | recipe | epochs | unit | target ε | δ | σ | C | expected batch (units) | steps |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for record, dp in rows:
        table.append(f"| {record['domain']} | {record['run']} | {record['epochs'][-1]['epoch']} | {dp.get('unit', 'chunk')} "
                     f"| {dp.get('target_epsilon')} | {dp.get('delta')} | {number(dp.get('noise_multiplier'))} "
                     f"| {dp.get('max_grad_norm')} | {number(dp.get('expected_batch_size'), 1)} | {dp.get('steps')} |")
    return [*table, ""]


def write_report(args, runs: list[Run], unfinished: list[Run]) -> None:
    out_dir = args.out.parent / "results"
    (out_dir / "runs").mkdir(parents=True, exist_ok=True)
    for run in runs:
        name = "-".join(run.directory.relative_to(args.work).parts)  # clinical-mlm, clinical-12-epochs-mlm
        (out_dir / "runs" / f"{name}.json").write_text(json.dumps(run.record, indent=1))
    settings = runs[0].record["settings"]
    lines = [
        "# Results: privacy and utility of every recipe",
        "",
        "Generated by `" + " ".join(["python bench/results.py", *(shlex.quote(a) for a in sys.argv[1:] if a != "--report-only")])
        + "`; do not edit by hand. "
        "Raw figures per run and epoch: [results/runs/](results/runs/). Definitions of every measure: [audit.md](audit.md).",
        "",
        "## Setup",
        "",
        f"- Corpora: the synthetic generators of `ppmlm synth` ({', '.join(args.domains)}), {args.users} users each, "
        f"seed {args.seed}, split by user into members (trained on), audit non-members and population.",
        f"- Model: {settings['model'] or 'the offline all-MiniLM-L6-v2 warm start with a fresh MLM head'}; "
        f"{' or '.join(str(e) for e in sorted({r.epochs for r in runs}))} epochs, batches of {settings['batch_size']} chunks "
        f"of at most {settings['max_length']} tokens, AdamW at "
        f"{settings['lr']} (fresh head: {settings['head_lr']}) with linear decay; DP runs at their recipes' defaults "
        "(the table below)" + (f"; overrides: `{' '.join(args.set)}`" if args.set else "") + ".",
        *warm_start_lines([r.record for r in runs]),
        f"- Audit after every epoch: {resolution([runs[0].record])}",
        "- Likelihood-ratio reference: one plain-MLM model per corpus trained on its population users, shared by every "
        "recipe, so that all face the same attacker.",
        f"- Machine: {machines_of(args.work, runs)}. Run minutes (tables): from a run's "
        "data being ready to its last audit, training and audits included; "
        f"{sum(r.record['wall_seconds'] for r in runs) / 60:.0f} minutes over the {len(runs)} runs reported, plus the "
        "reference models and each run's start-up. Training seconds count the optimizer steps alone.",
        *([f"- Not in this report: {len(unfinished)} planned runs had not finished when it was written ("
           + ", ".join(sorted({f'{r.domain} {r.name} ({r.epochs} epochs)' for r in unfinished})) + ")."] if unfinished else []),
        "",
    ]
    lines += dp_settings_table([r.record for r in runs if r.sweep is None])
    for domain in args.domains:
        records = [r.record for r in runs if r.domain == domain and r.sweep is None and r.epochs == args.epochs]
        if not records:
            continue
        plot_tradeoff(records, out_dir / f"tradeoff-{domain}.png", f"{domain} corpus")
        plot_regurgitation(records, out_dir / f"regurgitation-{domain}.png", f"{domain} corpus")
        blacklist = records[0]["blacklist"]["counts"]
        lines += [
            f"## {domain.capitalize()} corpus",
            "",
            f"Blacklist of the {blacklist.get('users')} members (k={records[0]['blacklist']['parameters']['k']}, "
            f"n={records[0]['blacklist']['parameters']['n']}): {blacklist.get('direct_terms')} direct and "
            f"{blacklist.get('indirect_terms')} indirect terms; indirect words are "
            f"{100 * (blacklist.get('indirect_share_of_distinct_words') or 0):.1f}% of distinct words and "
            f"{100 * (blacklist.get('indirect_share_of_word_occurrences') or 0):.1f}% of word occurrences (paper: 60% / 3%).",
            "",
            f"Last epoch ({args.epochs}). Utility: masked whole-word accuracy on non-members. Privacy: share of the members' "
            "identifiers never predicted (direct and indirect apart). Identifier MIA at user level; loss and "
            "likelihood-ratio (LR), reference-calibrated (RMIA) and neighbourhood (NB) MIA at sample (s) and user (u) "
            "level. Train s: seconds of training steps, all epochs.",
            "",
            *main_table(records),
            "",
            "Probing attacks, last epoch: name -> attribute inversion (top-k accuracy of a member's true attribute given "
            "their name; non-members are the baseline) and, with `--canaries`, the exposure of canaries planted 1, 4 and 16 "
            "times (bits; about 1.4 when not memorised).",
            "",
            *probe_table(records),
            "",
            f"![privacy against utility, {domain}](results/tradeoff-{domain}.png)",
            "",
            "Regurgitation (the paper's Figure 5): every identifier a model predicted, by how often it occurs in "
            "training and how often the model gave it out. Counts only, never the terms.",
            "",
            f"![regurgitation, {domain}](results/regurgitation-{domain}.png)",
            "",
            "Per epoch:",
            "",
            *epochs_table(records),
            "",
            "Agreement with the paper's trends:",
            "",
            *paper_checks(records),
            "",
        ]
    sweeps = [r.record for r in runs if r.sweep is not None]
    main_ppmlm = [r.record for r in runs if r.domain == args.domains[0] and r.name == "ppmlm" and r.epochs == args.epochs]
    if sweeps:
        plot_sweep(main_ppmlm + sweeps, out_dir / "sweep.png")
        lines += [
            f"## PPMLM over k and n ({args.domains[0]} corpus; appendices B and C)",
            "",
            "A term used by fewer than k members is an indirect identifier; n is the longest n-gram considered. Larger k "
            "or n protects more of the text: fewer identifiers can leak, fewer words are left to learn from.",
            "",
            *sweep_table(main_ppmlm + sweeps),
            "",
            "![k and n sweep](results/sweep.png)",
            "",
        ]
    for domain in long_domains(args):
        longer = [r.record for r in runs if r.domain == domain and r.epochs == args.long_epochs != args.epochs]
        if longer:
            lines += long_section(longer, args, out_dir)
    lines += [
        "## Why our figures can differ from the paper's",
        "",
        "- Scale: the paper fine-tunes BERT base, DistilRoBERTa and RoBERTa large on 928 real discharge summaries for "
        "4 to 32 epochs on GPUs; the default here is a 6-layer encoder whose MLM head starts untrained (the DP runs: "
        "trained on public text first, see Setup), on a few dozen synthetic users, for a few epochs on 2 CPU cores. "
        "Utility is therefore far lower in absolute terms, and plain "
        "MLM has had fewer passes over each identifier to memorize it: the paper sees privacy fall from 0.97 (4 epochs) "
        "to 0.92 (32 epochs). The same command reaches paper settings with `--epochs 32 --set train.max_length=512 "
        "model.name_or_path=...` on GPUs.",
        "- Audit size: few audited users make the low-FPR figures coarse (see Setup); AUCs and the privacy score are "
        "estimates over the audited subset.",
        "- Corpus: synthetic notes repeat each patient's details by construction, with a share of single-user words "
        "(see each corpus's line above) that differs from N2C2's 60% / 3%.",
        "",
    ]
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out} and {out_dir}/", flush=True)


def long_section(records: list[dict], args, out_dir: Path) -> list[str]:
    """The longer runs: every attack at epoch `args.epochs` and at the last, and which attack is strongest where."""
    domain, epochs = records[0]["domain"], args.long_epochs
    plot_attacks(records, out_dir / f"attacks-{domain}-{epochs}-epochs.png", f"membership attacks over {epochs} epochs, "
                 f"{domain} corpus")
    reported = sorted({args.epochs, epochs})
    lines = [
        f"## Every attack at {' and '.join(map(str, reported))} epochs ({domain} corpus)",
        "",
        f"The corpus, settings and audit of the Setup, trained for {epochs} epochs (the learning rate decays over all "
        f"{epochs}, so epoch {args.epochs} here is not what a {args.epochs}-epoch run gives) against a reference trained "
        f"{epochs} epochs on the population users; audited after every epoch, read at epochs "
        f"{' and '.join(map(str, reported))}. {resolution(records)}",
        "",
    ]
    for epoch in reported:
        lines += [f"Epoch {epoch}:", "", *main_table(records, epoch), "", *probe_table(records, epoch), ""]
    lines += [
        "Which attack is strongest where (ties listed together; the identifier attacks are user-level only):",
        "",
        *strongest_table(records, reported),
        "",
        f"![membership attacks over {epochs} epochs](results/attacks-{domain}-{epochs}-epochs.png)",
        "",
    ]
    return lines


def gpu_name() -> str | None:
    try:
        import torch

        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except Exception:  # noqa: BLE001 - the report only names the device
        return None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results.md")
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "results", help="run directories")
    parser.add_argument("--users", type=int, default=24, help="users of each synthetic corpus")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--audit-users", default="null", help="audited users per side (null: all)")
    parser.add_argument("--audit-chunks", default="2", help="audited chunks per user (null: all); 2 is the audit's own default")
    parser.add_argument("--canaries", action="store_true", help="plant canaries in every audited run (audit.canaries); "
                        "without it the recipes' default holds: one-run canaries in DP runs only")
    parser.add_argument("--long-epochs", type=int, help="also train --long-recipes this many epochs on --long-domains and "
                        "report every attack at --epochs and at this epoch")
    parser.add_argument("--long-domains", nargs="+", choices=["clinical", "legal"],
                        help="domains of the --long-epochs runs (default: the first of --domains)")
    parser.add_argument("--long-recipes", nargs="+", default=["mlm", "ppmlm", "dp", "ppmlm+dp-user"], choices=list(RECIPES))
    parser.add_argument("--recipes", nargs="*", default=list(RECIPES), choices=list(RECIPES),
                        help="recipes of the main comparison (none: only the --long-epochs runs)")
    parser.add_argument("--domains", nargs="+", default=["clinical", "legal"], choices=["clinical", "legal"])
    parser.add_argument("--sweep", choices=["axes", "grid", "none"], default="axes",
                        help="axes: k at n=1 and n at k=2; grid: every (k, n)")
    parser.add_argument("--k", type=int, nargs="+", default=[2, 3, 5])
    parser.add_argument("--n", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--set", nargs="*", default=[], help="Hydra overrides for every run, e.g. train.max_length=512")
    parser.add_argument("--launcher", default=sys.executable, help='e.g. "accelerate launch --multi_gpu --num_processes 8"')
    parser.add_argument("--report-only", action="store_true", help="only rewrite the report from finished runs")
    parser.add_argument("--jobs", type=int, default=1, help="runs trained side by side, each in its own process")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: at least 1")
    if args.long_domains and not set(args.long_domains) <= set(args.domains):
        parser.error(f"--long-domains {' '.join(args.long_domains)}: each must be one of --domains ({' '.join(args.domains)})")
    return args


def main() -> None:
    args = parse_args()
    references, runs = plan_runs(args)
    launcher = shlex.split(args.launcher)
    if not args.report_only:
        train_all(references, launcher, args.jobs, args.work)  # every run's audit reads its domain's reference
        train_all(runs, launcher, args.jobs, args.work)
    unfinished = [run for run in runs if not finished(run)]
    runs = [run for run in runs if finished(run)]
    if not runs:
        sys.exit("bench/results.py: no finished run to report")
    for run in runs:
        run.record = collect(run)
    write_report(args, runs, unfinished)


if __name__ == "__main__":
    main()
