"""The layout's import rules (DESIGN.md, "Layout"), read from the source with ``ast``.

The question and document paths never import the training recipes or the benchmarks;
no package imports another that imports it back; ``audit`` stands alone.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from appliance.settings import PROJECT_ROOT

PACKAGES = ("appliance", "services", "audit")
OURS = (*PACKAGES, "benchmarks")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (PROJECT_ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(PROJECT_ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(module: str, path: Path) -> Iterator[str]:
    """Every module ``module`` imports, at the top or inside a function."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                yield ".".join([*base, *([node.module] if node.module else [])])
            else:
                yield node.module or ""


def _unit(module: str) -> str:
    """The node of the package graph: a folder of ``appliance`` (or one of its top-level
    modules), or a whole top-level package."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "appliance" and len(parts) > 1 else parts[0]


def _edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for module, path in _modules().items():
        for imported in _imports(module, path):
            if imported.split(".")[0] in OURS and _unit(imported) != _unit(module):
                edges[_unit(module)].add(_unit(imported))
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in edges.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(edges):
        if node not in index:
            visit(node)
    return found


def test_no_package_imports_one_that_imports_it_back() -> None:
    assert _cycles(_edges()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(edges) == [["a", "b", "c"]]


def test_only_the_training_commands_import_the_training_recipes() -> None:
    importers = {
        module
        for module, path in _modules().items()
        if not module.startswith("appliance.training")
        and any(i.startswith("appliance.training") for i in _imports(module, path))
    }
    assert importers == {"appliance.cli.training"}


def test_nothing_shipped_imports_the_benchmarks() -> None:
    assert not [
        module
        for module, path in _modules().items()
        if any(i.split(".")[0] == "benchmarks" for i in _imports(module, path))
    ]


def test_the_audit_package_needs_only_the_standard_library_and_cryptography() -> None:
    allowed = {*sys.stdlib_module_names, "audit", "cryptography"}
    outside = {
        (module, imported)
        for module, path in _modules().items()
        if module.split(".")[0] == "audit"
        for imported in _imports(module, path)
        if imported.split(".")[0] not in allowed
    }
    assert outside == set()


def test_loading_the_question_and_document_paths_loads_no_training_or_benchmark_code() -> None:
    """What the web service and every engine import, transitively, in a fresh process."""
    probe = (
        "import sys, services.app, appliance.engines, appliance.ingest.pipeline;"
        "print(sorted(m for m in sys.modules "
        "if m.startswith(('appliance.training', 'benchmarks', 'rerank_bench'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
