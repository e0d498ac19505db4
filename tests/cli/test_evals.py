"""``hango eval``: a suite run against an agent as a CI gate (its table, its exit code, its
JUnit XML and JSON files), compared with a baseline, and the listing commands."""

from __future__ import annotations

import json
import uuid
from xml.etree import ElementTree

import pytest

from tests.support.cli import ok_json

pytestmark = pytest.mark.usefixtures("inline_runs")


@pytest.fixture
def suite(api) -> dict:
    made = api.post("/v1/eval-suites", json={"name": "smoke"}).json()
    for case in ({"name": "quotes", "turns": ["count these words"],
                  "graders": [{"type": "contains", "value": "count these words"}]},
                 {"name": "french", "turns": ["hello"],
                  "graders": [{"type": "regex", "pattern": "^Bonjour"}]}):
        assert api.post(f"/v1/eval-suites/{made['id']}/cases", json=case).status_code == 201
    return made


@pytest.fixture
def agent(api) -> dict:
    return api.post("/v1/agents", json={"name": "helper", "model": "scripted:demo"}).json()


def test_eval_run_gates_on_the_pass_rate_and_writes_ci_files(hango, suite, agent, tmp_path):
    junit, report = tmp_path / "junit.xml", tmp_path / "eval.json"
    result = hango("eval", "run", "smoke", "--agent", agent["id"], "--min-pass", "0.5",
                   "--junit", str(junit), "--json-file", str(report))
    assert result.exit_code == 0, result.stderr
    assert "quotes" in result.stdout and "1/2 passed (50%)" in result.stdout
    assert "french" in result.stdout and "failed" in result.stdout
    cases = ElementTree.parse(junit).getroot().find("testsuite")
    assert cases is not None and cases.get("tests") == "2" and cases.get("failures") == "1"
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert failed == ["french"]
    assert "does not match /^Bonjour/" in (cases.find("testcase[@name='french']/failure").text
                                            or "")
    written = json.loads(report.read_text())
    assert written["eval_run"]["summary"]["passed"] == 1 and written["comparison"] is None

    below = hango("eval", "run", suite["id"], "--agent", agent["id"], "--min-pass", "0.9")
    assert below.exit_code == 1 and "pass rate 50.00% is below 90.00%" in below.stderr


def test_json_is_a_flag_as_elsewhere_and_the_file_its_own_option(hango, suite, agent, tmp_path):
    """``--json`` after the command prints the JSON, as ``hango --json eval run`` does; the file
    is ``--json-file``, and ``--json FILE`` is no longer read as one."""
    report = tmp_path / "eval.json"
    printed = ok_json(hango("eval", "run", "smoke", "--agent", agent["id"], "--json",
                            "--json-file", str(report)))
    assert printed["eval_run"]["summary"]["passed"] == 1 and printed["comparison"] is None
    assert json.loads(report.read_text())["eval_run"]["id"] == printed["eval_run"]["id"]
    before = ok_json(hango("--json", "eval", "runs"))["results"]
    old = hango("eval", "run", "smoke", "--agent", agent["id"], "--json", str(report))
    assert old.exit_code == 2 and "unexpected extra argument" in old.stderr
    assert ok_json(hango("--json", "eval", "runs"))["results"] == before  # none was started


def test_a_regression_against_the_baseline_fails_the_gate(hango, api, suite, agent):
    base = ok_json(hango("--json", "eval", "run", "smoke", "--agent", agent["id"]))["eval_run"]
    case = next(c for c in api.get(f"/v1/eval-suites/{suite['id']}/cases").json()["results"]
                if c["name"] == "quotes")
    api.patch(f"/v1/eval-suites/{suite['id']}/cases/{case['id']}",
              json={"graders": [{"type": "exact", "value": "something else"}]})
    gated = hango("eval", "run", "smoke", "--agent", agent["id"], "--baseline", base["id"])
    assert gated.exit_code == 1
    assert "regressed: quotes" in gated.stdout
    assert "regressed against the baseline: quotes" in gated.stderr
    head = ok_json(hango("--json", "eval", "runs"))["results"][0]
    compared = hango("eval", "compare", base["id"], head["id"])
    assert compared.exit_code == 0 and "regressed: quotes" in compared.stdout


def test_listing_commands(hango, suite, agent):
    assert "smoke" in hango("eval", "suites").stdout
    cases = hango("eval", "cases", "smoke")
    assert cases.exit_code == 0 and "french" in cases.stdout and "regex" in cases.stdout
    run = ok_json(hango("--json", "eval", "run", "smoke", "--agent", agent["id"]))["eval_run"]
    shown = hango("eval", "show", run["id"])
    assert shown.exit_code == 0 and "1/2 passed" in shown.stdout
    missing = hango("eval", "cases", "no-such-suite")
    assert missing.exit_code == 2 and "No eval suite named" in missing.stderr
    unknown = hango("eval", "show", str(uuid.uuid4()))  # the SDK's error, as the CLI says it
    assert unknown.exit_code == 1 and "error 404 not_found" in unknown.stderr
