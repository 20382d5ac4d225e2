"""The public API of `ppmlm/__init__.py`: every name of `__all__` resolves, the README's Python example
imports only what exists, and `import ppmlm` (so the `ppmlm` command) stays light."""
import ast
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ppmlm

ROOT = Path(__file__).resolve().parents[1]


def readme_python_example() -> str:
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Python API", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)


def test_every_public_name_resolves():
    assert len(set(ppmlm.__all__)) == len(ppmlm.__all__)
    assert set(ppmlm.__all__) == {"__version__", *ppmlm._HOMES}  # every public name has a home module, and only those
    for name in ppmlm.__all__:
        assert getattr(ppmlm, name) is not None, name
    assert ppmlm.__version__ == importlib.metadata.version("ppmlm")
    assert ppmlm.train is importlib.import_module("ppmlm.pipeline").train  # the same object, not a copy (audited training)
    assert set(ppmlm.__all__) <= set(dir(ppmlm))


def test_readme_example_imports_resolve_from_the_public_api():
    tree = ast.parse(readme_python_example())
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert imports and all(isinstance(node, ast.ImportFrom) and node.module == "ppmlm" for node in imports)
    names = {alias.name for node in imports for alias in node.names}
    assert names <= set(ppmlm.__all__)
    exec(compile(ast.Module(body=imports, type_ignores=[]), "README.md", "exec"), {})


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        ppmlm.no_such_name


def test_import_is_light_and_the_whole_api_imports_without_a_cycle():
    """`import ppmlm` and the `ppmlm` command's module load neither torch nor transformers; a fresh process
    importing every public name at once (star import) finds no import circle."""
    light = ("import sys, ppmlm, ppmlm.cli; heavy = {'torch', 'transformers', 'datasets'} & set(sys.modules); "
             "assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", light], check=True, cwd=ROOT, timeout=120)
    everything = "from ppmlm import *; import ppmlm; assert all(name in globals() for name in ppmlm.__all__)"
    subprocess.run([sys.executable, "-c", everything], check=True, cwd=ROOT, timeout=300)
