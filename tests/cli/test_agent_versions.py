"""``hango agents versions|version|diff|restore`` and ``sessions create --agent-version``."""

from __future__ import annotations

from tests.support.cli import ok_json


def test_versions_listed_shown_compared_and_restored(hango, api):
    agent = ok_json(hango("--json", "agents", "create", "--name", "v", "--model", "scripted:demo",
                          "--system-prompt", "Be kind."))
    changed = api.patch(f"/v1/agents/{agent['id']}",
                        json={"system_prompt": "Be brief.", "config": {"max_turns": 4}})
    assert changed.status_code == 200, changed.text

    listed = hango("agents", "versions", agent["id"])
    assert listed.exit_code == 0, listed.stderr
    assert listed.stdout.index(" 2 ") < listed.stdout.index(" 1 ")
    one = ok_json(hango("--json", "agents", "version", agent["id"], "1"))
    assert (one["number"], one["system_prompt"]) == (1, "Be kind.")

    diff = hango("agents", "diff", agent["id"], "1", "2")
    assert diff.exit_code == 0, diff.stderr
    assert "  -Be kind.\n" in diff.stdout and "  +Be brief.\n" in diff.stdout
    assert "model: unchanged" in diff.stdout and "+ $.max_turns 4" in diff.stdout
    assert ok_json(hango("--json", "agents", "diff", agent["id"], "2", "2"))["same_content"]

    restored = ok_json(hango("--json", "agents", "restore", agent["id"], "1"))
    assert (restored["version"], restored["system_prompt"]) == (3, "Be kind.")
    third = ok_json(hango("--json", "agents", "version", agent["id"], "3"))
    assert third["content_hash"] == one["content_hash"]

    pinned = ok_json(hango("--json", "sessions", "create", "--agent", agent["id"],
                           "--agent-version", "2"))
    assert pinned["agent_version"] == 2
    missing = hango("agents", "version", agent["id"], "9")
    assert missing.exit_code == 1 and "not found" in missing.stderr.lower()
    refused = hango("sessions", "create", "--agent", agent["id"], "--agent-version", "9")
    assert refused.exit_code == 1 and "agent_version" in refused.stderr
