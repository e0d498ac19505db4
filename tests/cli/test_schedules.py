"""``hango schedules``: made, listed, paused, resumed, fired by hand and read back."""

from __future__ import annotations

from tests.support.cli import create_agent, ok_json


def test_a_schedule_round_trip(hango, hango_settings):
    hango_settings(run_inline=False, broker_url="")  # a fired run waits, queued
    agent = create_agent(hango)
    made = ok_json(hango("--json", "schedules", "create", "--name", "digest", "--cron",
                         "0 9 * * MON-FRI", "--timezone", "Europe/Paris", "--message",
                         "Summarise yesterday.", "--agent", agent["id"]))
    assert made["cron"] == "0 9 * * MON-FRI" and made["active"] is True
    listed = hango("schedules", "list")
    assert listed.exit_code == 0 and "0 9 * * MON-FRI (Europe/Paris)" in listed.stdout
    paused = ok_json(hango("--json", "schedules", "pause", made["id"]))
    assert paused["active"] is False and paused["next_run_at"] is None
    refused = hango("schedules", "run", made["id"])
    assert refused.exit_code == 1 and "paused" in refused.stderr
    assert ok_json(hango("--json", "schedules", "resume", made["id"]))["active"] is True
    fired = ok_json(hango("--json", "schedules", "run", made["id"]))
    assert fired["manual"] is True and fired["status"] == "started" and fired["run"]
    fires = hango("schedules", "fires", made["id"])
    assert fires.exit_code == 0 and "(by hand)" in fires.stdout and fired["run"] in fires.stdout
    both = hango("schedules", "create", "--name", "x", "--cron", "* * * * *", "--message", "m")
    assert both.exit_code == 2 and "exactly one of --agent and --session" in both.stderr
    bad = hango("schedules", "create", "--name", "x", "--cron", "61 * * * *", "--message", "m",
                "--agent", agent["id"])
    assert bad.exit_code == 1 and "cron" in bad.stderr
    assert hango("schedules", "delete", made["id"]).exit_code == 0
