"""The package's shape: each stage imports only the stages below it, and no module imports itself round a
circle (function-level imports included: hiding a circle inside a function does not remove it)."""
from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parent.parent / "ppmlm"
# Lowest first. A unit is a top-level module or subpackage of ppmlm; it imports from its own row (without a
# circle) and the rows above it, never from a row below.
LAYERS = [
    {"errors", "files", "resources", "words", "section", "models", "rundir", "processes"},
    {"identifiers"},  # corpus generators label their identifiers with identifiers.labels
    {"corpus"},
    {"features"},
    {"masking"},
    {"audit"},  # a library: it never trains (the pipeline hands it a trainer for the reference model)
    {"sharing"},
    {"training"},
    {"detector"},  # a tagger trained on a team's annotations (training), measured by blacklists (identifiers)
    {"downstream"},
    {"config"},  # the typed run configuration: gathers the sections each stage owns
    {"pipeline"},  # the recipe layer: wires training, the audit and the downstream task
    {"hf"},  # the recipe's data, masking and per-epoch audit inside a Hugging Face Trainer script
    {"cli"},
    {"__main__", "__init__"},  # `python -m ppmlm`, and the public API
]
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> nx.DiGraph:
    """Module -> ppmlm module it imports, at any level of the file."""
    modules = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                if target in modules and target != name:
                    graph.add_edge(name, target)
    return graph


def unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_unit_has_a_layer():
    assert {unit(module) for module in imports()} <= set(RANK), "add the new module or subpackage to LAYERS"


def test_stages_import_only_downwards():
    upward = sorted(f"{a} -> {b}" for a, b in imports().edges
                    if RANK[unit(a)] < RANK[unit(b)])
    assert upward == []


def test_no_import_circle():
    assert list(nx.simple_cycles(imports())) == []
