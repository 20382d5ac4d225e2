"""Recipes: the packaged ones, a user's own folder (--config-dir), and composition errors as one line."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ppmlm.cli import main
from ppmlm.errors import PPMLMError
from ppmlm.pipeline import compose_config
from ppmlm.resources import recipes_folder

ROOT = Path(__file__).resolve().parents[1]
RECIPES = sorted(path.stem for path in (ROOT / "recipes" / "recipe").glob("*.yaml"))


def composition_error(*overrides: str, config_dir=None) -> str:
    """The message compose_config fails with: one line, which the commands print after 'error: '."""
    with pytest.raises(PPMLMError) as raised:
        compose_config(list(overrides), config_dir)
    assert "\n" not in str(raised.value)
    return str(raised.value)


def test_packaged_recipes_are_the_repository_folder():
    assert recipes_folder().resolve() == ROOT / "recipes"  # the editable install maps ppmlm.recipes to recipes/


def test_unknown_recipe_lists_the_recipes():
    assert composition_error("recipe=nosuch").startswith("recipe=nosuch: no such recipe; choose one of "
                                                         + ", ".join(RECIPES))


@pytest.mark.parametrize("override, named, hint", [
    ("train.batchsize=2", "train.batchsize is not a key", "did you mean train.batch_size? to add a new key write "
                                                          "+train.batchsize=2"),
    ("train.dp.nosuch.deep=1", "train.dp.nosuch is not a key", "to add a new key write +train.dp.nosuch.deep=1"),
])
def test_unknown_key_is_named_with_how_to_add_one(override, named, hint):
    message = composition_error(override)
    assert message.startswith(f"{override}: {named}") and hint in message


@pytest.mark.parametrize("override, reason", [
    ("train.batch_size==", "extraneous input '='"),
    ("train.batch_size=${oops", "mismatched input '{'"),
    ("a b", "token recognition error"),
])
def test_malformed_override_is_named_with_the_forms_allowed(override, reason):
    message = composition_error(override)
    assert message.startswith(f"malformed override {override!r}: {reason}")
    assert "; write key=value to change a key, +key=value to add one" in message


def test_sweep_and_unresolvable_interpolation_are_one_line():
    assert "key=[a,b] for a list" in composition_error("train.batch_size=1,2")
    assert composition_error("output_dir=${nosuch}") == "output_dir: Interpolation key 'nosuch' not found"


@pytest.fixture
def own_recipes(tmp_path) -> Path:
    """A user's recipe folder: a copy of the packaged config with another seed and only its own recipe."""
    folder = tmp_path / "my_recipes"
    (folder / "recipe").mkdir(parents=True)
    config = (recipes_folder() / "config.yaml").read_text()
    (folder / "config.yaml").write_text(config.replace("seed: 42", "seed: 7").replace("recipe: ppmlm", "recipe: mine"))
    shutil.copy(recipes_folder() / "recipe" / "mlm.yaml", folder / "recipe" / "mine.yaml")
    return folder


def test_own_recipe_folder_is_composed_alone(own_recipes):
    cfg = compose_config([], own_recipes)
    assert cfg.seed == 7 and cfg.masking.variant == "mlm"
    message = composition_error("recipe=ppmlm", config_dir=own_recipes)  # the packaged recipes are not mixed in
    assert message == f"recipe=ppmlm: no such recipe; choose one of mine (the files in {own_recipes / 'recipe'})"


def test_config_dir_without_config_yaml_is_named(tmp_path):
    assert composition_error(config_dir=tmp_path).startswith(f"--config-dir {tmp_path}: {tmp_path} has no config.yaml")


def test_recipes_in_the_working_directory_are_read_only_when_named(own_recipes, monkeypatch, capsys):
    monkeypatch.chdir(own_recipes.parent)
    own_recipes.rename("recipes")
    assert compose_config([]).seed == 42
    assert "./recipes is read only with --config-dir recipes" in capsys.readouterr().err
    assert compose_config([], "recipes").seed == 7


def test_ppmlm_train_takes_config_dir_and_fails_in_one_line(own_recipes, capsys):
    assert main(["train", "--config-dir", str(own_recipes), "recipe=nosuch"]) == 2
    assert capsys.readouterr().err == ("ppmlm train: error: recipe=nosuch: no such recipe; choose one of mine "
                                       f"(the files in {own_recipes / 'recipe'})\n")


def test_overrides_may_come_before_and_after_config_dir(own_recipes, capsys):
    assert main(["train", "seed=3", "--config-dir", str(own_recipes), "recipe=nosuch"]) == 2
    assert "recipe=nosuch: no such recipe; choose one of mine" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["train", "recipe=mlm", "--no-such-option"])
    assert "unrecognized arguments: --no-such-option" in capsys.readouterr().err


def test_train_script_takes_config_dir_and_fails_in_one_line(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "train.py"), "--config-dir", str(tmp_path), "train.epochs=1"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and done.stderr.startswith(f"train.py: error: --config-dir {tmp_path}: "), done.stderr
    assert done.stderr.count("\n") == 1
