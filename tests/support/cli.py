"""Helpers for the ``hango`` command's tests (the fixtures are in tests/cli/conftest.py)."""

from __future__ import annotations

import json
from typing import Any

from click.testing import Result


def ok_json(result: Result) -> Any:
    """The JSON a command printed, after asserting it succeeded."""
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout)


def create_agent(hango, name: str = "cli-helper") -> dict:
    return ok_json(hango("--json", "agents", "create", "--name", name, "--model", "scripted:demo"))


