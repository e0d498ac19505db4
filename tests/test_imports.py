"""No import cycle anywhere in the project, counting every import.

Module-level, lazy (inside a function) and ``TYPE_CHECKING`` imports all count, and so do the
package ``__init__`` modules an import runs on the way (``import a.b.c`` runs ``a`` and
``a.b``), except a module's own enclosing packages, which are already imported by then. The
calls of a run go one way (apis → services → tasks → worker → {execution, checkpoint}); a
middleware never imports the stack that assembles it.

Which way the imports go between packages (the layers) is import-linter's check, its contracts
in ``pyproject.toml`` (``make test`` runs ``lint-imports``); the test here pins that those
contracts count every import too.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "accounts", "integrations", "agents", "runs", "context", "inspector",
            "webhooks", "schedules", "evals", "cli", "hango_project", "hango_api", "migrations",
            "tests")


def project_modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    modules = {}
    for package in packages:
        for path in (root / package).rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imported_names(module: str, path: Path) -> Iterator[str]:
    """Every module name an import statement anywhere in the file names."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            yield base
            # `from pkg import name` may import the submodule pkg.name.
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    modules = project_modules(root, packages)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for module, path in modules.items():
        for name in imported_names(module, path):
            # The named module, and each package on the way that is not one of ours already.
            while name:
                if name in modules and name != module and not module.startswith(name + "."):
                    graph[module].add(name)
                name = name.rpartition(".")[0]
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_project_has_no_import_cycle():
    graph = import_graph()
    assert "runs.execution.worker" in graph and "harness.stack" in graph  # the walk found the code
    found = cycles(graph)
    assert found == [], "\n".join(
        " ⇄ ".join(c) + "\n    " + "\n    ".join(f"{m} → {sorted(graph[m] & set(c))}" for m in c)
        for c in found)


@pytest.mark.parametrize("source", [
    "from b import f",
    "def g():\n    from b import f",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from b import f",
    "import b",
])
def test_the_check_counts_lazy_and_type_checking_imports(tmp_path, source):
    """A cycle hidden in a function or behind TYPE_CHECKING is still a cycle."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(source.replace(" b", " pkg.b"))
    (package / "b.py").write_text("from pkg.a import x\n")
    assert cycles(import_graph(tmp_path, ("pkg",))) == [["pkg.a", "pkg.b"]]


def test_a_package_init_importing_its_importer_is_a_cycle(tmp_path):
    """``import pkg.sub.mod`` runs ``pkg/sub/__init__``: an __init__ that imports back the
    module importing it closes a cycle."""
    sub = tmp_path / "pkg" / "sub"
    sub.mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "user.py").write_text("from pkg.sub.mod import y\n")
    (sub / "__init__.py").write_text("from pkg import user\n")
    (sub / "mod.py").write_text("y = 1\n")
    assert cycles(import_graph(tmp_path, ("pkg",))) == [["pkg.sub", "pkg.user"]]


def lint_imports(root: Path, layers: list[str]) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over the packages in ``root`` with one layers contract, under the
    project's own session options (``[tool.importlinter]`` in ``pyproject.toml``)."""
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    session = {**{k: v for k, v in options.items() if k != "contracts"}, "root_packages": ["pkg"]}
    lines = ["[tool.importlinter]", *(f"{k} = {json.dumps(v)}" for k, v in session.items()),
             "[[tool.importlinter.contracts]]", 'name = "layers"', 'type = "layers"',
             f"layers = {json.dumps(layers)}"]
    (root / "pyproject.toml").write_text("\n".join(lines) + "\n")
    return subprocess.run([str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
                          cwd=root, capture_output=True, text=True, timeout=60)


@pytest.mark.slow
@pytest.mark.parametrize("source", [
    "from b import f",
    "def g():\n    from b import f",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from b import f",
    "import b",
])
def test_the_layers_contracts_count_lazy_and_type_checking_imports(tmp_path, source):
    """Under the project's options an upward import in a function or behind TYPE_CHECKING
    breaks a layers contract as a module-level one does."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(source.replace(" b", " pkg.b"))
    (package / "b.py").write_text("f = 1\n")
    assert lint_imports(tmp_path, ["pkg.a", "pkg.b"]).returncode == 0  # a above b: kept
    broken = lint_imports(tmp_path, ["pkg.b", "pkg.a"])
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "pkg.a -> pkg.b" in broken.stdout
