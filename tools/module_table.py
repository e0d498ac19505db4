"""The module tables of the docs site (``docs/design/harness.md``), generated from docstrings.

A hand-written table drifted from the code it described; this one is each module's name and the
first sentence of its docstring, so the module says what it is for and the document follows. A
table sits between ``<!-- modules: <package> -->`` and ``<!-- end modules -->``.
``python tools/module_table.py`` rewrites every table in place; ``tests/test_project.py`` fails
when the document and the code differ.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "design" / "harness.md"
TABLE = re.compile(r"(<!-- modules: (\S+) -->\n).*?(<!-- end modules -->)", re.DOTALL)
ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")  # :mod:`x`, :class:`~x` ... read as `x`


def summary(path: Path) -> str:
    """The first sentence of the module's docstring, as Markdown for one table cell."""
    docstring = ast.get_docstring(ast.parse(path.read_text(), str(path)))
    if not docstring:
        raise ValueError(f"{path.relative_to(ROOT)} has no docstring to describe it")
    paragraph = " ".join(docstring.split("\n\n")[0].split())
    sentence = re.match(r".+?[.!?](?=\s|$)", paragraph)
    text = sentence.group(0) if sentence else paragraph
    return ROLE.sub(r"`\1`", text).replace("``", "`").replace("|", "\\|")


def rows(package: Path, prefix: str = "") -> list[str]:
    """One row per module of ``package``, then each subpackage's own row and its modules'."""
    modules = sorted(p for p in package.glob("*.py") if p.name != "__init__.py")
    found = [f"| `{prefix}{p.name}` | {summary(p)} |" for p in modules]
    for sub in sorted(p.parent for p in package.glob("*/__init__.py")):
        found.append(f"| `{prefix}{sub.name}/` | {summary(sub / '__init__.py')} |")
        found += rows(sub, f"{prefix}{sub.name}/")
    return found


def table(package: str) -> str:
    lines = ["| module | what it is for (the first sentence of its docstring) |", "|---|---|"]
    return "\n".join([*lines, *rows(ROOT / package)]) + "\n"


def render(doc: str) -> str:
    """``doc`` with every marked table generated anew from the code."""
    return TABLE.sub(lambda m: f"{m.group(1)}\n{table(m.group(2))}\n{m.group(3)}", doc)


def main() -> None:
    DOC.write_text(render(DOC.read_text()))
    print(f"rewrote the module tables of {DOC.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
