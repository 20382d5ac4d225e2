"""Utility of patient-level DP against chunk-level DP at the same target ε, on public text grouped into pseudo-users.

The Medical Abstracts corpus (../shared/data/medical_abstracts, Schopf et al. 2023) has no authors or patients,
so its abstracts are grouped into pseudo-users: within each condition class, a seeded shuffle of the abstracts
is cut into users of 1 to 2 x `--notes-per-user` - 1 abstracts (sizes drawn uniformly: `--notes-per-user` on
average), so users have uneven numbers of documents on one topic, as patients have notes. Grouping by class alone
would give 5 users, too few for user-level DP to learn anything.

Three runs of `train.py` on each corpus (the abstracts, and the embedded default of `python train.py`), same seed,
model and epochs, PPMLM masking:

- `ppmlm`: no DP (the utility to lose);
- `ppmlm+dp chunk`: DP-SGD whose unit is a chunk (`train.dp.enabled=true`), ε = target per chunk;
- `ppmlm+dp user`: `recipe=dp-user`, whose unit is a pseudo-user: ε = target for all of a user's documents.

Each run is audited after every epoch without a reference model (`audit.reference=none`); the table reads the last:
utility is the audit's masked whole-word accuracy on the held-out (non-member) users. The chunk-level run also reports the
group bound its ε gives the user with most chunks, which is what chunk-level DP promises a patient.

    python bench/dp_utility.py [--corpora embedded abstracts] [--documents 600] [--notes-per-user 6] [--epochs 2]
                               [--seed 42] [--set KEY=VALUE ...]

Runs live under --work (default runs/dp-utility/); a finished run is reused. The last line is
`dp_user_utility_ratio: X` (user-level utility / chunk-level utility at the same target ε, on the last corpus whose
chunk-level utility is above 0).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from ppmlm.pipeline import compose_config
from ppmlm.rundir import RunDirectory

ROOT = Path(__file__).resolve().parents[1]
ABSTRACTS = ROOT.parent / "shared" / "data" / "medical_abstracts" / "medical_tc_test.csv"
RUNS = {
    "ppmlm": ["recipe=ppmlm"],
    "ppmlm+dp chunk": ["recipe=ppmlm", "train.dp.enabled=true"],
    "ppmlm+dp user": ["recipe=dp-user"],
}


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
    if out.exists() and out.read_text() != text:  # same settings write the same file; anything else is not ours
        sys.exit(f"bench/dp_utility.py: {out} exists and is not this corpus: move it or choose another --work")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return {"documents": len(records), "users": len(sizes), "documents_per_user": [min(sizes), float(np.mean(sizes)), max(sizes)]}


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
    """Utility, the loss attack and ε with its unit, from the run's last epoch."""
    run = RunDirectory(directory)
    epoch = run.complete_epochs()[-1]
    audit = json.loads(run.audit_of(epoch).read_text())
    ends = [json.loads(line) for line in run.metrics.read_text().splitlines() if '"epoch_end"' in line]
    end = ends[-1]
    privacy = end.get("privacy") or {}
    return {"epoch": epoch, "utility": audit["utility"]["masked_word_accuracy"],
            "member_utility": audit["utility"].get("member_masked_word_accuracy"),
            "loss_auc": ((audit["attacks"].get("loss") or {}).get("user") or {}).get("auc"),
            "epsilon": end.get("epsilon"), "unit": privacy.get("unit"), "group": privacy.get("group"),
            "noise_multiplier": privacy.get("noise_multiplier"), "sample_rate": privacy.get("sample_rate"),
            "steps": privacy.get("steps"), "train_seconds": sum(e["train_seconds"] for e in ends)}


def number(value, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def table(results: dict) -> list[str]:
    rows = ["| run | unit of ε | ε RDP / PRV (δ 1e-5) | that ε read for the user with most chunks (group bound) | σ | q "
            "| steps | utility (non-members) | members | loss MIA user AUC | train s |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, f in results.items():
        eps, group = f["epsilon"], f["group"]
        group_text = (f"{group['chunks']} chunks: " + " / ".join(
            f"{group[accountant]['epsilon']:.1f}" + (" (δ ≥ 1: vacuous)" if group[accountant]["vacuous"] else "")
            for accountant in ("rdp", "prv") if accountant in group) if group else "-")
        rows.append(f"| {name} | {f['unit'] or '-'} | "
                    f"{(number(eps.get('rdp'), 2) + ' / ' + number(eps.get('prv'), 2)) if eps else '-'} | {group_text} | "
                    f"{number(f['noise_multiplier'], 3)} | {number(f['sample_rate'], 4)} | {f['steps'] or '-'} | "
                    f"{number(f['utility'])} | {number(f['member_utility'])} | {number(f['loss_auc'], 2)} "
                    f"| {f['train_seconds']:.0f} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", nargs="+", choices=["embedded", "abstracts"], default=["embedded", "abstracts"])
    parser.add_argument("--abstracts", type=Path, default=ABSTRACTS)
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "dp-utility")
    parser.add_argument("--documents", type=int, default=600, help="abstracts drawn (seeded) from the corpus")
    parser.add_argument("--notes-per-user", type=int, default=6, help="mean abstracts per pseudo-user")
    parser.add_argument("--epochs", type=int, default=2, help="epochs on the abstracts (the embedded default: its recipes')")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--set", nargs="*", default=[], help="Hydra overrides for every run, e.g. train.dp.target_epsilon=3")
    args = parser.parse_args()

    corpora = {}
    if "embedded" in args.corpora:
        epochs = compose_config([]).train.epochs
        corpora["embedded"] = ([f"train.epochs={epochs}"], epochs)
        print(f"embedded: the default synthetic corpus, {epochs} epochs", flush=True)
    if "abstracts" in args.corpora:
        if not args.abstracts.is_file():
            sys.exit(f"bench/dp_utility.py: {args.abstracts} not found (the public data of ../shared/data)")
        corpus = args.work / "abstracts-pseudo-users.jsonl"
        counts = pseudo_user_corpus(args.abstracts, corpus, args.documents, args.notes_per_user, args.seed)
        print(f"abstracts: {counts['documents']} abstracts in {counts['users']} pseudo-users "
              f"({counts['documents_per_user'][0]} to {counts['documents_per_user'][2]} each, mean "
              f"{counts['documents_per_user'][1]:.1f}), {args.epochs} epochs", flush=True)
        corpora["abstracts"] = ([f"data.path={corpus}", f"train.epochs={args.epochs}"], args.epochs)
    common = [f"seed={args.seed}", "audit.reference=none", "audit.neighbours=0", "audit.inversion.enabled=false", *args.set]
    ratios = []
    for corpus_name, (overrides, epochs) in corpora.items():
        results = {}
        for name, recipe in RUNS.items():
            directory = args.work / corpus_name / name.replace("+", "-").replace(" ", "-")
            train(f"{corpus_name} {name}", [*overrides, *common, *recipe], directory, epochs)
            results[name] = figures(directory)
        print(f"\n{corpus_name}:\n" + "\n".join(table(results)) + "\n", flush=True)
        chunk, user = results["ppmlm+dp chunk"]["utility"], results["ppmlm+dp user"]["utility"]
        if chunk:
            ratios.append(user / chunk)
    print(f"dp_user_utility_ratio: {ratios[-1]:.3f}" if ratios else "dp_user_utility_ratio: n/a (chunk-level utility 0)")


if __name__ == "__main__":
    main()
