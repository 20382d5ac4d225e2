"""Folders shipped inside the package: the training recipes and the NER pipelines.

In the repository they are `recipes/` and `ner_models/`; pyproject.toml installs them as the packages
`ppmlm.recipes` and `ppmlm.ner_models`, so importlib.resources finds them the same way in an editable
install and in a wheel, wherever the working directory is.
"""
from __future__ import annotations

import atexit
from contextlib import ExitStack
from functools import cache
from importlib.resources import as_file, files
from pathlib import Path

# Hydra and spaCy read directories: a package imported from an archive is extracted once, removed at exit.
_extracted = ExitStack()
atexit.register(_extracted.close)


@cache
def package_folder(package: str) -> Path:
    """The folder of a data package, as a path on disk."""
    return _extracted.enter_context(as_file(files(package)))


def recipes_folder() -> Path:
    """The packaged recipes: config.yaml and recipe/*.yaml."""
    return package_folder("ppmlm.recipes")


def ner_model_folder(name: str) -> Path:
    """A packaged NER pipeline, e.g. clinical_en."""
    return package_folder("ppmlm.ner_models") / name
