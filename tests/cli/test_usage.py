"""``hango usage`` and ``hango prices`` against a real server whose runs execute inline: the
tenant's price for the scripted model set from the command line, a run's calls then costed with
it in the usage table and its totals, the price removed again, and bad prices refused."""

from __future__ import annotations

import pytest

from tests.support.cli import ok_json


@pytest.fixture
def session(api, inline_runs) -> str:
    agent = api.post("/v1/agents", json={"name": "demo", "model": "scripted:demo"}).json()
    return api.post("/v1/sessions", json={"agent": agent["id"]}).json()["id"]


def test_a_price_set_here_costs_the_calls_usage_shows(hango, api, session):
    before = api.post(f"/v1/sessions/{session}/messages", json={"content": "count"}).json()
    unpriced = hango("usage", "--run", before["run"]["id"])
    assert unpriced.exit_code == 0, unpriced.output
    assert "unpriced" in unpriced.stdout and "nothing priced · 5 calls unpriced" in unpriced.stdout

    made = hango("prices", "set", "scripted:demo", "--currency", "EUR", "--input", "1",
                 "--cache-write", "1.25", "--cache-read", "0.1", "--output", "4")
    assert made.exit_code == 0, made.output
    assert "scripted:demo" in made.stdout and "1.25" in made.stdout
    listed = hango("prices", "list")
    assert listed.exit_code == 0 and "scripted:demo" in listed.stdout and "EUR" in listed.stdout

    run = api.post(f"/v1/sessions/{session}/messages", json={"content": "count"}).json()["run"]
    shown = ok_json(hango("--json", "usage", "--run", run["id"]))
    [eur] = shown["totals"]["cost"]["by_currency"]
    assert (eur["currency"], eur["calls"]) == ("EUR", 5)
    table = hango("usage", "--run", run["id"])
    assert table.exit_code == 0, table.output
    assert f"cost {eur['total']} EUR" in table.stdout
    assert all(f"{row['cost']['total']} EUR" in table.stdout for row in shown["results"])
    # The session's calls: both runs', priced and not, never added across.
    both = hango("usage", "--session", session)
    assert f"cost {eur['total']} EUR · 5 calls unpriced" in both.stdout

    assert hango("prices", "delete", "scripted:demo").exit_code == 0
    gone = hango("prices", "show", "scripted:demo")
    assert gone.exit_code == 1 and "no price" in gone.stderr


def test_a_bad_price_is_refused(hango):
    bad = hango("prices", "set", "scripted:demo", "--input", "-1", "--cache-write", "1",
                "--cache-read", "1", "--output", "x")
    assert bad.exit_code == 1 and "input" in bad.stderr and "output" in bad.stderr
    unknown = hango("prices", "set", "nobody:model", "--input", "1", "--cache-write", "1",
                    "--cache-read", "1", "--output", "1")
    assert unknown.exit_code == 1 and "provider" in unknown.stderr
