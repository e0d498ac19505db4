"""Eval suites and eval runs made through the API, for the tests of the evals app, its admin
and the Context panel's evaluation."""

from __future__ import annotations

from typing import Any

DEMO_CASE = {"name": "echoes", "turns": ["count these four words"],
             "graders": [{"type": "contains", "value": "count these four words"},
                         {"type": "tool_called", "tool": "word_count",
                          "args_schema": {"type": "object", "required": ["text"]}}]}
FAILING_CASE = {"name": "fails", "turns": ["hello there"],
                "graders": [{"type": "regex", "pattern": "^Bonjour"}, {"type": "no_tool_called"}]}


def make_suite(caller: Any, *cases: dict[str, Any], name: str = "smoke") -> dict[str, Any]:
    suite = caller.client.post("/v1/eval-suites", {"name": name}, format="json")
    assert suite.status_code == 201, suite.content
    for case in cases:
        created = caller.client.post(f"/v1/eval-suites/{suite.json()['id']}/cases", case,
                                     format="json")
        assert created.status_code == 201, created.content
    return suite.json()


def start(caller: Any, suite: dict[str, Any], agent: dict[str, Any], **extra: Any
          ) -> dict[str, Any]:
    """An eval run started and read back (finished, where runs execute on commit)."""
    response = caller.client.post("/v1/eval-runs", {"suite": suite["id"], "agent": agent["id"],
                                                    **extra}, format="json")
    assert response.status_code == 201, response.content
    return caller.client.get(f"/v1/eval-runs/{response.json()['id']}").json()


def regressed_and_fixed(caller: Any, agent: dict[str, Any]) -> tuple[dict[str, Any],
                                                                       dict[str, Any]]:
    """Two eval runs of one suite: a baseline where ``echoes`` passes and ``fails`` fails, and,
    the cases' graders changed, one where the reverse."""
    suite = make_suite(caller, DEMO_CASE, FAILING_CASE)
    base = start(caller, suite, agent)
    cases = caller.client.get(f"/v1/eval-suites/{suite['id']}/cases").json()["results"]
    by_name = {c["name"]: c for c in cases}
    for name, graders in (("echoes", [{"type": "exact", "value": "nope"}]),
                          ("fails", [{"type": "contains", "value": "hello"}])):
        patched = caller.client.patch(f"/v1/eval-suites/{suite['id']}/cases/{by_name[name]['id']}",
                                      {"graders": graders}, format="json")
        assert patched.status_code == 200, patched.content
    return base, start(caller, suite, agent)
