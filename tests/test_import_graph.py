"""The modules of ``curation/`` and ``judging_app/`` import only down the pipeline, and no two
modules import each other (directly or round a longer circle).

The imports are read with :mod:`ast` from the source, every ``import`` and ``from ... import``
anywhere in a module (inside functions too, since golden imports its heavy modules lazily), so a
lazy import cannot hide an upward step or a circle.

The floors, from the bottom: the project's package root (its version), the file formats, the
store, then the pipeline's stages in the order their data flows, and the interfaces on top. Export
sits above evaluate and machine because a version carries what they compute (the machine fill of
unjudged pairs, the decisive comparisons' settlement); comparing two versions' metrics is export's.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("curation", "judging_app")

FLOORS = [
    ("curation",),  # the package root: __version__
    ("formats",),
    ("store",),
    ("sample",),
    ("pool",),
    ("judge",),
    ("agree",),
    ("leak",),
    ("evaluate",),
    ("machine",),
    ("export",),
    ("cli", "judging_app", "demo", "__main__"),
]
FLOOR = {stage: level for level, stages in enumerate(FLOORS) for stage in stages}


def module_files() -> dict[str, Path]:
    """Dotted module name -> source file, for every module of the two packages."""
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of the two packages that ``name`` imports anywhere in its source."""

    def known(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [known(alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            # ``from curation.judge import decisive`` imports the module curation.judge.decisive
            targets = [known(f"{base}.{alias.name}") if f"{base}.{alias.name}" in modules else known(base)
                       for alias in node.names]
        else:
            continue
        found.update(t for t in targets if t and t != name)
    return found


def stage(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "judging_app":
        return "judging_app"
    return parts[1] if len(parts) > 1 else "curation"


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = module_files()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def test_every_package_is_shipped():
    # pyproject.toml lists the packages a wheel carries: a new subpackage must be listed there too
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts)
             for package in PACKAGES for p in (ROOT / package).rglob("__init__.py")}
    assert sorted(found - listed) == []


def test_every_module_has_a_floor(graph):
    assert {stage(m) for m in graph} <= set(FLOOR), "a new top-level module needs its floor in FLOORS"


def test_the_graph_is_read(graph):
    # the walker sees a lazy import inside a function and a ``from package import module``
    assert "curation.formats.limits" in graph["curation.formats.fileio"]
    assert "curation.store.models" in graph["curation.judge.assignment"]
    assert "curation.cli.base" in graph["curation.cli.assign"]


def test_no_import_runs_up_a_floor(graph):
    upward = sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets
                    if FLOOR[stage(t)] > FLOOR[stage(m)])
    assert upward == []


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_circles_are_found():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_two_modules_import_each_other(graph):
    assert circles(graph) == []
