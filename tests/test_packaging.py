"""The wheel is the whole package: built from the source tree, installed into a fresh folder and run from
another directory, with the checkout out of reach, it synthesizes a corpus, builds a blacklist with the
default NER pipeline and trains one epoch of a tiny model (recipes and NER pipelines are package data)."""
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import TINY_MODEL

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 300
# What the build reads; copied so that it never writes build/ or egg-info into the checkout.
BUILD_INPUTS = ("pyproject.toml", "setup.cfg", "README.md", "ppmlm", "recipes", "ner_models")

pytestmark = pytest.mark.slow


def run(command: list[str], cwd: Path, env: dict | None = None) -> str:
    """The command's output; the test fails with that output on an error exit or after TIMEOUT seconds."""
    try:
        done = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as timeout:
        pytest.fail(f"{' '.join(command)} still running after {TIMEOUT} s:\n{timeout.output}")
    assert done.returncode == 0, f"{' '.join(command)} exited with {done.returncode}:\n{done.stdout}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    pytest.importorskip("setuptools", minversion="77", reason="the build backend pyproject.toml requires")
    source = tmp_path_factory.mktemp("source")
    for name in BUILD_INPUTS:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(out),
         str(source)], cwd=out)
    (built,) = out.glob("ppmlm-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> tuple[Path, dict]:
    """The folder the wheel is installed into, and the environment of a Python that imports ppmlm from there
    only: -S (see `python`) skips the .pth files, the editable install's finder among them, and PYTHONPATH
    lists the target first, then the current interpreter's folders but the checkout, for the dependencies."""
    target = tmp_path_factory.mktemp("target")
    run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(target), str(wheel)],
        cwd=target)
    dependencies = [entry for entry in sys.path if entry and Path(entry).is_dir() and Path(entry).resolve() != ROOT]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), *dependencies]),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return target, env


def python(*args: str) -> list[str]:
    return [sys.executable, "-S", *args]


def test_wheel_holds_every_package_the_recipes_and_the_ner_pipeline(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = {path.parent.relative_to(ROOT).as_posix() for path in (ROOT / "ppmlm").rglob("__init__.py")}
    assert {f"{package}/__init__.py" for package in packages} <= names  # pyproject.toml lists each package
    recipes = {f"ppmlm/recipes/recipe/{path.name}" for path in (ROOT / "recipes" / "recipe").glob("*.yaml")}
    assert {"ppmlm/recipes/config.yaml", *recipes} <= names and recipes
    pipeline = {f"ppmlm/ner_models/clinical_en/{path.name}" for path in (ROOT / "ner_models" / "clinical_en").iterdir()
                if path.is_file()}
    assert {"ppmlm/ner_models/clinical_en/pipeline.json", *pipeline} <= names
    assert {"ppmlm/py.typed", "ppmlm/__main__.py"} <= names


def test_installed_wheel_synthesizes_blacklists_and_trains_from_another_directory(installed, tmp_path):
    target, env = installed
    where = run(python("-c", "import ppmlm, ppmlm.recipes, ppmlm.ner_models\n"
                             "for module in (ppmlm, ppmlm.recipes, ppmlm.ner_models): print(module.__file__)"),
                cwd=tmp_path, env=env)
    assert all(Path(line).resolve().is_relative_to(target.resolve()) for line in where.split()), where  # not the checkout

    run(python("-m", "ppmlm", "synth", "--users", "12", "--out", "c.jsonl"), cwd=tmp_path, env=env)
    summary = run(python("-m", "ppmlm", "blacklist", "--data", "c.jsonl", "--out", "bl"), cwd=tmp_path, env=env)
    assert "ner=default" in summary and (tmp_path / "bl").is_dir()
    run(python("-m", "ppmlm", "train", TINY_MODEL, "train.max_length=64", "train.batch_size=32", "train.epochs=1",
               "audit.enabled=false", "data.path=c.jsonl", "blacklist.path=bl", f"output_dir={tmp_path / 'run'}"),
        cwd=tmp_path, env=env)
    assert (tmp_path / "run" / "checkpoints" / "epoch-1" / "complete").exists()


def test_the_command_runs_from_a_folder_holding_a_run_named_ppmlm(tmp_path):
    """`cd runs` (the default run is runs/ppmlm, holding audit/): under `python -m`, the current folder comes first on
    sys.path, and its ppmlm/ folder is a namespace package that the editable install's finder, asked after the path,
    does not override; its audit/ then hid ppmlm.audit (ModuleNotFoundError: ppmlm.audit.command). Both `python -m
    ppmlm` and the `ppmlm` script reach the package, here the checkout's editable install."""
    (tmp_path / "ppmlm" / "audit").mkdir(parents=True)
    (tmp_path / "ppmlm" / "audit" / "epoch-1.json").write_text("{}")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    script = Path(sys.executable).with_name("ppmlm")
    for command in ([sys.executable, "-m", "ppmlm"], *([[str(script)]] if script.is_file() else [])):
        done = subprocess.run([*command, "audit", "--model", "ppmlm/checkpoints/epoch-1", "--out", "audited"], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=TIMEOUT)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.strip() == ("ppmlm audit: error: --model ppmlm/checkpoints/epoch-1: not a saved model directory "
                                       "(no config.json)")
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "ppmlm", "ppmlm/audit", "ppmlm/audit/epoch-1.json"]
