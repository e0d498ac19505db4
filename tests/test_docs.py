"""The docs site (mkdocs.yml): pages of a readable size, every page in the nav, and the generated
references complete. Links and anchors are checked by the strict build `make test` runs."""

from __future__ import annotations

from pathlib import Path

import yaml

from harness import telemetry
from tests.support.openapi import api_schema
from tools import api_reference

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def nav_pages() -> list[str]:
    def walk(node: object) -> list[str]:
        if isinstance(node, str):
            return [node]
        if isinstance(node, dict):
            return [page for value in node.values() for page in walk(value)]
        if isinstance(node, list):
            return [page for item in node for page in walk(item)]
        return []

    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    return walk(config["nav"])


def written_pages() -> list[str]:
    return sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))


def test_every_page_is_under_300_lines():
    assert len(written_pages()) >= 15
    sizes = {page: len((DOCS / page).read_text().splitlines()) for page in written_pages()}
    assert {page: lines for page, lines in sizes.items() if lines >= 300} == {}


def test_the_nav_names_every_page_once():
    nav = nav_pages()
    assert len(nav) == len(set(nav))
    generated = {"operations/configuration.md", "benchmarks.md"} | {
        f"api/{name}" for name in api_reference.pages(api_schema())}
    assert set(nav) == set(written_pages()) | generated


def test_the_api_reference_shows_every_operation():
    schema = api_schema()
    text = "\n".join(api_reference.pages(schema).values())
    for path, item in schema["paths"].items():
        for method in api_reference.METHODS:
            if method in item:
                assert f"## `{method.upper()} {path}`" in text


def test_the_telemetry_page_lists_every_metric():
    page = (DOCS / "operations" / "telemetry.md").read_text()
    names = [value for key, value in vars(telemetry).items() if key.startswith("METRIC_")]
    names.append(telemetry.ATTR_CONTEXT_TRY)  # a counter named by its attribute
    assert len(names) >= 20
    assert [name for name in names if f"`{name}`" not in page] == []


def test_the_readme_is_an_entry_point_not_a_manual():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200, "move the detail into a page of docs/"
    for command in ("make quickstart", "make test", "hango_client", ".venv/bin/hango"):
        assert command in readme
