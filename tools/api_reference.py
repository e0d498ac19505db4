"""The API reference pages of the docs site, generated from the OpenAPI schema of ``/v1/schema``.

One Markdown page per tag of the schema (``api/<tag>.md``): each operation with its description,
its parameters, the fields of its request body, and its answers. The errors nearly every route
answers are described once, on the page's head, and named by status code under each operation.
``tools/docs_hooks.py`` writes the pages when the site is built, so they never drift from the
routes; ``python tools/api_reference.py DIR`` writes them into ``DIR`` to read them as files.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

METHODS = ("get", "post", "put", "patch", "delete")
# Answered by (nearly) every authenticated route the same way: described once per page.
COMMON = ("400", "401", "403", "404", "406", "413", "429")
# Taken by every write the same way: described once per page too.
SHARED_PARAMETERS = ("Idempotency-Key",)


def schema() -> dict[str, Any]:
    """The schema ``GET /v1/schema`` serves, generated in this process (Django set up here)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hango_project.settings")
    import django

    django.setup()
    from drf_spectacular.generators import SchemaGenerator

    generated: dict[str, Any] = SchemaGenerator().get_schema(request=None, public=True)
    return generated


def _target(node: Mapping[str, Any], spec: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """(the component's name or "", the schema) of ``node``, following one ``$ref``."""
    if "$ref" not in node:
        return "", node
    name = node["$ref"].rsplit("/", 1)[1]
    return name, spec["components"]["schemas"][name]


def type_of(node: Mapping[str, Any], spec: Mapping[str, Any]) -> str:
    """A short type for a table cell: ``string``, ``integer``, ``Agent``, ``array of Run``…"""
    if "$ref" in node:
        name, target = _target(node, spec)
        return "enum" if "enum" in target else name
    for key in ("allOf", "oneOf", "anyOf"):
        if key in node:
            return " or ".join(type_of(part, spec) for part in node[key])
    kind = node.get("type", "any")
    if isinstance(kind, list):
        kind = " or ".join(kind)
    if kind == "array":
        return f"array of {type_of(node.get('items', {}), spec)}"
    return f"{kind} ({node['format']})" if "format" in node else kind


def cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _fields(node: Mapping[str, Any], spec: Mapping[str, Any]) -> Iterator[str]:
    name, target = _target(node, spec)
    properties = target.get("properties")
    if not properties:
        yield f"Body: `{type_of(node, spec)}`.\n"
        return
    required = set(target.get("required", ()))
    yield f"Body{f' (`{name}`)' if name else ''}:\n"
    yield "| field | type | required | meaning |"
    yield "|---|---|---|---|"
    for field, value in properties.items():
        meaning = value.get("description", "")
        if "$ref" in value:
            meaning = meaning or _target(value, spec)[1].get("description", "")
        if "enum" in _target(value, spec)[1]:
            choices = ", ".join(f"`{choice}`" for choice in _target(value, spec)[1]["enum"]
                                if choice not in ("", None))
            meaning = f"one of {choices}" + (f". {meaning}" if "* `" not in meaning else "")
        flag = "yes" if field in required else ""
        yield f"| `{field}` | {cell(type_of(value, spec))} | {flag} | {cell(meaning)} |"
    yield ""


def operation(
    path: str, method: str, op: Mapping[str, Any], spec: Mapping[str, Any]
) -> Iterator[str]:
    yield f"## `{method.upper()} {path}`\n"
    if op.get("summary"):
        yield op["summary"] + "\n"
    if op.get("description"):
        yield op["description"].strip() + "\n"
    parameters = op.get("parameters", [])
    if parameters:
        yield "| parameter | in | type | meaning |"
        yield "|---|---|---|---|"
        for parameter in parameters:
            where = parameter["in"] + (", required" if parameter.get("required") else "")
            kind = type_of(parameter.get("schema", {}), spec)
            meaning = parameter.get("description", "")
            if parameter["name"] in SHARED_PARAMETERS:
                meaning = "as on the head of this page"
            yield f"| `{parameter['name']}` | {where} | {cell(kind)} | {cell(meaning)} |"
        yield ""
    body = op.get("requestBody", {}).get("content", {})
    for media, content in body.items():
        if media == "application/json":
            yield from _fields(content.get("schema", {}), spec)
    answers = []
    for code, answer in op.get("responses", {}).items():
        if code in COMMON:
            continue
        schemas = [type_of(c["schema"], spec) for c in answer.get("content", {}).values()
                   if "schema" in c]
        shape = f" `{schemas[0]}`" if schemas else ""
        what = f": {cell(answer['description'])}" if answer.get("description") else ""
        answers.append(f"- **{code}**{shape}{what}")
    common = [code for code in op.get("responses", {}) if code in COMMON]
    if common:
        answers.append(f"- and the common errors {', '.join(sorted(common))}")
    yield "Answers:\n"
    yield from answers
    yield ""


def common_errors(spec: Mapping[str, Any]) -> Iterator[str]:
    seen: dict[str, str] = {}
    for item in spec["paths"].values():
        for method in METHODS:
            for code, answer in item.get(method, {}).get("responses", {}).items():
                if code in COMMON and answer.get("description"):
                    seen.setdefault(code, answer["description"])
    yield "| status | when |"
    yield "|---|---|"
    for code in sorted(seen):
        yield f"| {code} | {cell(seen[code])} |"
    yield ""
    shared: dict[str, str] = {}
    for item in spec["paths"].values():
        for method in METHODS:
            for parameter in item.get(method, {}).get("parameters", []):
                if parameter["name"] in SHARED_PARAMETERS:
                    shared.setdefault(parameter["name"], parameter.get("description", ""))
    for name, meaning in shared.items():
        yield f"The `{name}` header of a write: {meaning}\n"


def pages(spec: Mapping[str, Any]) -> dict[str, str]:
    """Page name (``<tag>.md``) → Markdown, for every tag of the schema."""
    by_tag: dict[str, list[str]] = {}
    for path, item in spec["paths"].items():
        for method in METHODS:
            if method in item:
                tag = item[method].get("tags", ["other"])[0]
                by_tag.setdefault(tag, []).extend(operation(path, method, item[method], spec))
    head = [
        "<!-- Generated from the OpenAPI schema by tools/api_reference.py at build time. -->\n",
        "Every JSON error has the shape `{\"error\": {\"code\", \"message\", …}}` "
        "([errors](index.md#errors)). These answers, common to most routes, are listed by code:\n",
        *common_errors(spec),
    ]
    return {f"{tag}.md": "\n".join([f"# {tag}\n", *head, *lines]) + "\n"
            for tag, lines in sorted(by_tag.items())}


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, text in pages(schema()).items():
        (out / name).write_text(text)
    print(f"wrote the API reference pages into {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
