"""The notebooks under notebooks/: committed without outputs, and executed end to end with nbclient against
tiny training runs of three recipes (one under DP-SGD), never printing a user id or a name."""
import json
import os
import re
from pathlib import Path

import nbformat
import pytest
from conftest import TINY_MODEL, small_corpus
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

from ppmlm.identifiers.blacklist import Blacklist
from ppmlm.pipeline import compose_config, train

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ("identifier_analysis", "privacy_utility", "roc_curves")


def notebook_path(name: str) -> Path:
    return ROOT / "notebooks" / f"{name}.ipynb"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_committed_notebook_is_valid_and_stripped(name):
    notebook = nbformat.read(notebook_path(name), as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and all(cell.outputs == [] and cell.execution_count is None for cell in code), \
        f"{name}.ipynb has outputs: strip them (notebooks/README.md)"
    assert notebook.metadata.kernelspec.name == "python3"


def test_python3_kernel_is_installed():
    """The kernel the notebooks name comes with ipykernel (the test extra)."""
    assert "python3" in KernelSpecManager().find_kernel_specs()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three audited tiny runs: mlm (1 epoch, population reference), ppmlm (2 epochs, n-grams up to 2, no
    reference) and recipe=dp (1 epoch, DP-SGD)."""
    tmp = tmp_path_factory.mktemp("notebook_runs")
    for recipe, extra in (("mlm", []),
                          ("ppmlm", ["train.epochs=2", "blacklist.n=2", "audit.reference=none"]),
                          ("dp", ["audit.reference=none"])):
        train(compose_config([
            TINY_MODEL, f"recipe={recipe}", f"data.path={small_corpus()}", "train.max_length=64", "train.epochs=1",
            "blacklist.ner=none", "blacklist.spans_from=phi", f"blacklist.cache_dir={tmp / 'cache'}",
            "audit.max_users_per_side=3", f"audit.reference_cache_dir={tmp / 'references'}",
            f"output_dir={tmp / 'runs' / recipe}", *extra]))
    return tmp


def execute(name: str, monkeypatch, **environment) -> nbformat.NotebookNode:
    """Runs the notebook in a python3 kernel, in notebooks/ as Jupyter does, with this checkout importable;
    a cell that raises fails the test with its traceback."""
    for key, value in environment.items():
        monkeypatch.setenv(key, str(value))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    notebook = nbformat.read(notebook_path(name), as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    return notebook


def shown_text(notebook) -> str:
    """Everything the notebook printed or displayed as text (images left out)."""
    parts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", ()):
            parts.append(output.get("text", ""))
            parts += [value for kind, value in output.get("data", {}).items() if kind.startswith("text/")]
    return "\n".join(parts)


def secrets_shown(tmp: Path, text: str) -> set[str]:
    """User ids of the corpus, pseudonyms of the scores files and the blacklists' name words found in `text`."""
    found = set()
    for split in (tmp / "runs").glob("*/split.json"):
        found.update(user for key in ("members", "audit_non_members", "population")
                     for user in json.loads(split.read_text())[key])
    for scores in (tmp / "runs").glob("*/audit/scores-epoch-*.jsonl"):
        for line in scores.read_text().splitlines():
            row = json.loads(line)
            found.update(value for key in ("user", "sample") if (value := row.get(key)))
    for terms in (tmp / "cache").glob("*/terms.jsonl"):
        for line in terms.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            if "NAME" in entry["labels"] and len(entry["term"]) >= 4 and any(c.isalpha() for c in entry["term"]):
                found.add(entry["term"])
    return {secret for secret in found if re.search(rf"\b{re.escape(secret)}\b", text, re.IGNORECASE)}


@pytest.mark.slow
def test_identifier_analysis_finds_the_runs_blacklist(runs, monkeypatch):
    notebook = execute("identifier_analysis", monkeypatch, PPMLM_RUN=runs / "runs" / "ppmlm")
    text = shown_text(notebook)
    assert "k=2, n=2" in text and "n <= 2" in text  # the ppmlm run's own blacklist, with its bigrams
    assert "no per-user count" not in text
    assert not secrets_shown(runs, text)


@pytest.mark.slow
def test_privacy_utility_tables_every_run_and_epoch(runs, monkeypatch):
    notebook = execute("privacy_utility", monkeypatch, PPMLM_RUNS=runs / "runs")
    text = shown_text(notebook)
    assert "3 runs, 4 audited epochs" in text
    assert "mlm + DP-SGD" in text and "ε" in text
    assert sum("image/png" in output.get("data", {}) for cell in notebook.cells for output in cell.get("outputs", ())) == 2
    assert not secrets_shown(runs, text)


@pytest.mark.slow
def test_roc_curves_agree_with_the_audit_figures(runs, monkeypatch):
    runs_dirs = os.pathsep.join(str(runs / "runs" / name) for name in ("mlm", "ppmlm"))
    notebook = execute("roc_curves", monkeypatch, PPMLM_RUNS=runs_dirs, PPMLM_EPOCH=1)
    text = shown_text(notebook)
    agreed = re.search(r"(\d+) attack figures recomputed from the scores files agree with epoch-N.json to 1e-09", text)
    assert agreed and int(agreed.group(1)) >= 12, text[-2000:]  # every attack with a score, sample and user level, 2 runs
    assert not secrets_shown(runs, text)


@pytest.mark.slow
def test_stats_count_identifiers_of_both_kinds_per_user(runs):
    """Figure 2's overlap: at k=2 each identifier of both kinds belongs to one user; at any k the per-user
    count stays within the user's indirect identifiers."""
    [directory] = [d for d in (runs / "cache").iterdir() if json.loads((d / "stats.json").read_text())["parameters"]["n"] == 2]
    blacklist = Blacklist.load(directory)
    assert sum(blacklist.stats["per_user"]["both"]) == blacklist.stats["counts"]["both_terms"] > 0
    wider = blacklist.with_k(4).stats
    assert sum(wider["per_user"]["both"]) >= wider["counts"]["both_terms"]
    assert all(b <= i for b, i in zip(wider["per_user"]["both"], wider["per_user"]["indirect"]))
