"""`python -m ppmlm`: the `ppmlm` command, for environments where its script is not on PATH.

`python -m` puts the current folder first on sys.path. Run from a folder holding a run named ppmlm (`cd runs`: the
default run is runs/ppmlm, with audit/ and checkpoints/ inside), the import system then takes that folder for a
namespace package `ppmlm`, since no regular package of that name is on sys.path under an editable install, whose
finder (setuptools') is asked only after the path. This file is still found, through that finder, but every
subpackage the run's folder also holds (ppmlm.audit) would come from the run. So the package is first imported
again, from this file's own folder, before anything of it is used.
"""
import importlib
import importlib.util
import sys
from pathlib import Path


def _own_package() -> None:
    """Puts this file's package in place of a namespace package `ppmlm` imported from the current folder."""
    here = Path(__file__).resolve().parent
    package = sys.modules.get("ppmlm")
    if package is not None and getattr(package, "__file__", None) is not None:
        return  # the regular package: nothing shadows it
    for name in [name for name in sys.modules if name == "ppmlm" or name.startswith("ppmlm.")]:
        del sys.modules[name]
    spec = importlib.util.spec_from_file_location("ppmlm", here / "__init__.py", submodule_search_locations=[str(here)])
    package = importlib.util.module_from_spec(spec)
    sys.modules["ppmlm"] = package
    spec.loader.exec_module(package)


_own_package()
sys.exit(importlib.import_module("ppmlm.cli").main())
