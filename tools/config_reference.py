"""The configuration reference of the docs site, generated from ``HangoSettings``.

Every environment variable the server reads is a field of ``HangoSettings``
(``hango_project/config.py``), declared in its group in ``hango_project/variables.py`` with its
type, its default and, in the docstring under it, what it means. This module renders one table
per group from those fields; ``tools/docs_hooks.py`` writes it into the site when it is built,
so the reference never drifts from the code. ``python tools/config_reference.py`` prints it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, SecretStr
from pydantic.fields import FieldInfo

from hango_project.config import HangoSettings
from hango_project.variables import BASE_DIR

ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")  # :mod:`x`, :class:`~x` ... read as `x`
HEADER = "| variable | default | meaning |"
INTRO = """\
# Configuration reference

<!-- Generated from HangoSettings by tools/config_reference.py at build time: edit the
docstrings in hango_project/variables.py, not this page. -->

Everything is read from the environment; with nothing set, hango runs on embedded defaults.
Each variable is a field of one frozen, typed object, `HangoSettings` in
`hango_project/config.py` (its fields, by group, in `hango_project/variables.py`), parsed once
at start-up. An empty value counts as unset. Flags take `1`/`true`/`yes`/`on` or
`0`/`false`/`no`/`off`. A bad value (`HANGO_RUN_LEASE_SECONDS=abc`) stops the process with an
error naming the variable. This page is generated from those fields when the site is built.

OpenTelemetry's own variables (`OTEL_TRACES_EXPORTER`, `OTEL_EXPORTER_OTLP_ENDPOINT`,
`OTEL_SERVICE_NAME`…) are read by its SDK, not by hango: traces and metrics go nowhere unless
they are set ([telemetry](telemetry.md)). The CLI, a client of the API, reads its own
`HANGO_API_URL` and `HANGO_API_KEY`.
"""


def variables(field: FieldInfo, name: str) -> list[str]:
    alias = field.validation_alias
    if isinstance(alias, AliasChoices):
        return [str(choice) for choice in alias.choices]
    return [alias if isinstance(alias, str) else f"HANGO_{name.upper()}"]


def literal(value: Any) -> str:
    """``value`` as it would be written in the environment, in backticks; or words."""
    if value is None or value == "":
        return "none"
    if isinstance(value, SecretStr):
        return "none" if not value.get_secret_value() else "(secret)"
    if isinstance(value, bool):
        return f"`{int(value)}`"
    if isinstance(value, Path):
        relative = value.relative_to(BASE_DIR) if value.is_relative_to(BASE_DIR) else value
        return f"`./{relative}`" if value.is_relative_to(BASE_DIR) else f"`{relative}`"
    if isinstance(value, list):
        return f"`{','.join(str(item) for item in value)}`" if value else "none"
    if isinstance(value, dict):
        return f"`{json.dumps(value)}`"
    return f"`{value}`"


def bounds(field: FieldInfo) -> str:
    """The field's limits (``Field(ge=…, le=…)``), in words."""
    words = {"ge": "at least", "gt": "more than", "le": "at most", "lt": "less than"}
    found = [f"{words[name]} {getattr(rule, name)}" for rule in field.metadata
             for name in words if getattr(rule, name, None) is not None]
    return f" Allowed: {', '.join(found)}." if found else ""


def default(field: FieldInfo) -> str:
    if field.default_factory is not None:
        return "derived (see its meaning)"
    return literal(field.default)


def groups() -> Iterator[type]:
    """The variables' groups, in the order ``hango_project/variables.py`` declares them."""
    found = [cls for cls in HangoSettings.__mro__
             if cls.__module__ == "hango_project.variables" and "__annotations__" in vars(cls)
             and not cls.__name__.startswith("_")]
    yield from reversed(found)


def table(group: type) -> Iterator[str]:
    title, _, rest = (group.__doc__ or group.__name__).strip().partition("\n")
    yield f"## {title.rstrip('.').split(':')[0]}\n"
    yield f"{' '.join([title, *rest.split()])}\n"
    yield HEADER
    yield "|---|---|---|"
    for name in vars(group)["__annotations__"]:
        field = HangoSettings.model_fields[name]
        names = " or ".join(f"`{variable}`" for variable in variables(field, name))
        meaning = ROLE.sub(r"`\1`", " ".join((field.description or "").split())).replace("``", "`")
        meaning = (meaning + bounds(field)).replace("|", "\\|")
        yield f"| {names} | {default(field)} | {meaning} |"
    yield ""


def page() -> str:
    return "\n".join([INTRO, *(line for group in groups() for line in table(group))])


if __name__ == "__main__":
    print(page())
