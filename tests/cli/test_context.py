"""``hango context show`` against a real server (pytest-django's live_server on PostgreSQL)
with a session the demo model really ran: the parts, totals, cost and diff it prints, and the
refusals every context command makes before any request."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

import pytest

from cli.context_output import SOURCES
from runs.models import Message
from tests.support.cli import ok_json
from tests.support.servers import free_port

GROUPS = ("system", "tools", "messages")
ROW = re.compile(r"^ (\[x\]|\[ \]) +(\S+) ")


@dataclass
class Row:
    group: str
    sent: bool
    tokens: int
    notes: str


@dataclass
class Shown:
    rows: dict[str, Row]  # by part id
    totals: dict[str, int]  # each group's total row
    lines: list[str]


def shown(stdout: str) -> Shown:
    """``context show``'s tables read back: each row's box, tokens and notes, each group's total
    (the tokens column is right-aligned under its header)."""
    rows, totals, lines = {}, {}, [line.rstrip() for line in stdout.splitlines()]
    group, end = "", 0
    for line in lines:
        if line in GROUPS:
            group = line
        elif line.split()[:2] == ["sent", "part"]:
            end = line.index("tokens") + len("tokens")
        elif match := ROW.match(line):
            rows[match[2]] = Row(group=group, sent=match[1] == "[x]",
                                 tokens=int(line[:end].split()[-1]), notes=line[end:].strip())
        elif line.split()[:1] == ["total"] and group and group not in totals:
            totals[group] = int(line[:end].split()[-1])
    return Shown(rows=rows, totals=totals, lines=lines)


def show(hango, session: dict) -> Shown:
    return show_args(hango, "--session", session["id"])


def show_args(hango, *args: str) -> Shown:
    result = hango("context", "show", *args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return shown(result.stdout)


def snapshot(api, session: dict, query: str = "") -> dict:
    response = api.get(f"/v1/sessions/{session['id']}/context{query}")
    assert response.status_code == 200, response.text
    return response.json()


def overrides(api, path: str) -> list[dict]:
    response = api.get(f"{path}/context-overrides")
    assert response.status_code == 200, response.text
    return response.json()["overrides"]


def excluded(*parts: str) -> list[dict]:
    return [{"part": p, "action": "exclude", "replacement": None} for p in parts]


def line_of(lines: list[str], start: str) -> str:
    [line] = [x for x in lines if x.startswith(start)]
    return line


def test_show_prints_every_part_with_its_tokens_and_the_group_totals(hango, api, demo):
    body = snapshot(api, demo)
    table = show(hango, demo)
    for group in GROUPS:
        parts = body[group]
        assert parts
        for part in parts:
            row = table.rows[part["id"]]
            assert (row.group, row.sent, row.tokens) == (group, part["included"], part["tokens"])
        assert table.totals[group] == sum(p["tokens"] for p in parts if p["included"])
    assert set(table.rows) == {p["id"] for g in GROUPS for p in body[g]}
    assert line_of(table.lines, "framing").split()[1] == str(body["framing"])
    assert sum(table.totals.values()) + body["framing"] == body["totals"]["after"]
    assert (f"{body['totals']['after']} tokens sent, {body['totals']['before']} without the "
            "overrides") in line_of(table.lines, "total ")
    assert "notice" not in table.lines[-1]


def test_show_labels_pairs_stale_replaced_and_cached_parts(hango, api, demo):
    api.put(f"/v1/sessions/{demo['id']}/context-overrides", json=excluded("message:5",
                                                                         "message:99"))
    api.put(f"/v1/agents/{demo['agent']}/context-overrides",
            json=[{"part": "system:agent", "action": "replace", "replacement": "Be terse."}])
    table = show(hango, demo)
    rows = table.rows
    assert not rows["message:4"].sent and not rows["message:5"].sent
    assert rows["message:4"].notes == "paired with message:5"
    assert rows["message:5"].notes == "paired with message:4"
    assert rows["message:99"].notes == "stale: not in the request"
    assert rows["system:agent"].notes == "replaced; cached" and rows["system:agent"].sent
    assert rows["tool:echo"].notes == "cached" and rows["message:1"].notes == ""
    assert line_of(table.lines, "overrides").endswith(
        "3 active; stale (kept, doing nothing until the part returns): message:99")
    assert line_of(table.lines, "cache").startswith("cache      the parts marked cached")
    left_out = sum(r.tokens for r in rows.values() if r.group == "messages" and not r.sent)
    assert any(line.split()[:1] == ["total"] and line.endswith(f"{left_out} tokens left out")
               for line in table.lines)


def test_show_says_when_the_prefix_is_too_short_for_the_models_cache(hango, api, demo):
    api.patch(f"/v1/agents/{demo['agent']}", json={
        "model": "anthropic:claude-sonnet-4-5", "allowed_tools": ["echo"]}).raise_for_status()
    body = snapshot(api, demo)
    table = show(hango, demo)
    assert not any("cached" in row.notes for row in table.rows.values())
    assert line_of(table.lines, "cache") == (
        f"cache      nothing is cached: the stable prefix is {body['cache_prefix_tokens']:,} "
        "tokens, the model caches from 1,024")


def test_show_says_which_counts_are_by_rule_or_estimated(hango, api, demo):
    api.patch(f"/v1/agents/{demo['agent']}", json={"model": "openai:gpt-4o"}).raise_for_status()
    table = show(hango, demo)
    assert all(row.notes.endswith("counted by rule") for part, row in table.rows.items()
               if part.startswith("tool:"))
    assert not any("counted by rule" in row.notes or "estimated" in row.notes
                   for part, row in table.rows.items() if not part.startswith("tool:"))
    assert line_of(table.lines, "framing").endswith(
        "tokens the provider adds around the parts (by the provider's published rule)")
    api.patch(f"/v1/agents/{demo['agent']}",
              json={"model": "anthropic:claude-sonnet-4-5"}).raise_for_status()
    table = show(hango, demo)
    assert all(row.notes.endswith("estimated") for part, row in table.rows.items()
               if part.startswith("tool:"))
    assert line_of(table.lines, "framing").endswith("(estimated)")


def test_show_marks_what_the_servers_template_drops(hango, api, demo, hango_settings):
    """``--counted provider`` on a team's own llama.cpp server whose template drops the system
    prompt and the tools: each part it drops says so, and the total says who counted it."""
    from harness import served_snapshot
    from harness.providers import served_count
    from tests.support.model_servers import ModelServer

    server = ModelServer("llama.cpp", template="gemma")
    try:
        hango_settings(openai_base_url=server.base_url, openai_api_key="test-key")
        api.patch(f"/v1/agents/{demo['agent']}",
                  json={"model": "openai:served-model"}).raise_for_status()
        table = show_args(hango, "--session", demo["id"], "--counted", "provider")
        dropped = {part for part, row in table.rows.items()
                   if "dropped by the server's chat template" in row.notes}
        # This template renders the user's and the model's text only: the tool calls and
        # their results go too; the task and the answer stay.
        assert dropped >= {part for part, row in table.rows.items()
                           if row.group in ("system", "tools")}
        assert {"message:1", "message:10"}.isdisjoint(dropped) and "message:3" in dropped
        assert line_of(table.lines, "total").endswith(
            "counted by the model's llama.cpp server, its chat template applied")
    finally:
        server.close()
        served_count.forget()
        served_snapshot.forget()


def test_show_says_when_the_next_call_would_compact(hango, api, demo):
    api.patch(f"/v1/agents/{demo['agent']}",
              json={"config": {"summarization": {"trigger_tokens": 100}}}).raise_for_status()
    body = snapshot(api, demo)
    assert body["would_compact"] is True
    through = body["compaction"]["summarized"]["through"]
    table = show(hango, demo)
    tokens = body["compaction"]["tokens"]
    notice = [i for i, line in enumerate(table.lines) if line.startswith("notice")][0]
    end = table.lines.index("model settings")
    assert " ".join(" ".join(line.split()) for line in table.lines[notice:end]) == (
        f"notice the next call is compacted first ({tokens:,} tokens, over the budget of "
        f"100): the summary part stands for message:1 to {through}; it is made when the call "
        "is sent (up to 1,024 tokens), its text not known yet")
    assert table.rows["summary"].sent
    assert table.rows["message:1"].notes == "summarized: the summary is sent in its place"
    assert line_of(table.lines, "run ").endswith("none active: the first call of a new run")


def test_show_says_when_a_run_would_stop_instead_of_calling(hango, api, demo):
    """A message longer than the window even compacted: a run stops with context_overflow."""
    Message.objects.create(session_id=demo["id"], seq=11, role="user",
                           content=[{"type": "text", "text": "word " * 40_000}])
    failure = snapshot(api, demo)["would_fail"]
    assert failure.startswith("The conversation is too long for the model")
    lines = " ".join(" ".join(line.split()) for line in show(hango, demo).lines)
    assert f"notice a run would stop here, calling no model: {failure[:40]}" in lines


def test_show_says_whose_call_it_is_and_what_a_paused_batch_sends(hango, api, inline_runs):
    agent = api.post("/v1/agents", json={
        "name": "asks", "model": "scripted:demo",
        "config": {"interrupt_on": {"word_count": ["approve", "reject"]}}}).json()
    session = api.post("/v1/sessions", json={"agent": agent["id"]}).json()
    run = api.post(f"/v1/sessions/{session['id']}/messages",
                   json={"content": "count these four words"}).json()["run"]
    assert run["status"] == "awaiting_approval"
    queued = api.post(f"/v1/sessions/{session['id']}/messages",
                      json={"content": "then say hello", "multitask": "enqueue"}).json()
    lines = show(hango, session).lines
    assert line_of(lines, "run ").endswith(
        f"{run['id']} (awaiting_approval), from its checkpoint after turn 3")
    assert line_of(lines, "paused batch").endswith(
        "its results go in message:7: word_count d5_wc waiting for a decision: result not "
        "known yet")
    assert line_of(lines, "queued").endswith(
        f"queued:{queued['message']['id']} (3 tokens), not in this request: then say hello")


def test_show_with_a_message_shows_the_call_it_would_start(hango, api, demo):
    table = show_args(hango, "--session", demo["id"], "--message", "and then?")
    assert table.rows["message:11"].sent
    assert any("message:11" in x and "#11 user (previewed, not posted)" in x
               for x in table.lines)
    assert len(api.get(f"/v1/sessions/{demo['id']}/messages").json()["results"]) == 10
    refused = hango("context", "show", "--session", demo["id"], "--message", "x", "--full",
                    "message:1")
    assert refused.exit_code == 2 and "--message shows the table only" in refused.stderr


def test_show_json_is_the_apis_snapshot(hango, api, demo):
    assert ok_json(hango("--json", "context", "show", "--session", demo["id"])) == \
        snapshot(api, demo)
    assert ok_json(hango("context", "show", "--session", demo["id"], "--counted", "provider",
                         "--json")) == snapshot(api, demo, "?counted=provider")


def test_full_prints_one_parts_whole_content(hango, api, demo):
    api.put(f"/v1/agents/{demo['agent']}/context-overrides",
            json=[{"part": "system:agent", "action": "replace", "replacement": "Be terse."}])
    result = hango("context", "show", "--session", demo["id"], "--full", "system:agent")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ("system:agent: sent, replaced\nBe terse.\n"
                             "--- original, before the replace override:\nYou help.\n")
    whole = snapshot(api, demo, "?full=message:2")
    assert ok_json(hango("--json", "context", "show", "--session", demo["id"],
                         "--full", "message:2")) == whole
    printed = hango("context", "show", "--session", demo["id"], "--full", "message:2").stdout
    assert printed == f"message:2: sent\n{whole['content']}\n"
    missing = hango("context", "show", "--session", demo["id"], "--full", "message:99")
    assert missing.exit_code == 1
    assert missing.stderr.startswith("error 404 not_found: ") and "  part: message:99" in \
        missing.stderr


def diff_rows(stdout: str) -> dict[str, list[str]]:
    """``--diff``'s table read back: each part's status, tokens before and now, delta, note."""
    lines = stdout.splitlines()
    start = next(i for i, x in enumerate(lines) if x.split()[:2] == ["status", "part"])
    rows = {}
    for line in lines[start + 1:]:
        cells = line.rstrip().split(maxsplit=5)
        if cells and cells[0] in ("added", "removed", "changed", "same"):
            rows[cells[1]] = [cells[0], *cells[2:]]
    return rows


def test_show_diff_prints_each_part_against_the_last_call(hango, api, demo):
    result = hango("context", "show", "--session", demo["id"], "--diff")
    assert result.exit_code == 0, result.stderr
    body = snapshot(api, demo, "?against=last")
    answer = next(p for p in body["messages"] if p["id"] == "message:10")
    rows = diff_rows(result.stdout)
    assert rows["message:10"] == ["added", "0", str(answer["tokens"]), f"+{answer['tokens']}"]
    assert rows["message:1"][0] == rows["system:agent"][0] == "same"
    assert set(rows) == {p["id"] for p in body["diff"]["parts"]}
    assert f"against run {body['diff']['against']['run']}, turn 5" in result.stdout
    assert "is sent as it was" in result.stdout
    call = body["diff"]["against"]["call"]
    assert (f"the inspector predicted {call['predicted_cached_tokens']:,} cached"
            in " ".join(result.stdout.split()))


def test_show_prints_the_next_calls_cost_or_that_the_model_is_unpriced(hango, api, demo):
    unpriced = hango("context", "show", "--session", demo["id"])
    assert unpriced.exit_code == 0, unpriced.stderr
    assert "the model has no known price" in " ".join(unpriced.stdout.split())
    priced = api.put("/v1/prices/scripted:demo", json={
        "currency": "EUR", "input": "3", "cache_write": "3.75", "cache_read": "0.3",
        "output": "15"})
    assert priced.status_code in (200, 201), priced.text
    cost = snapshot(api, demo)["cost"]
    result = hango("context", "show", "--session", demo["id"])
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert (f"input {cost['likely']} EUR likely, {cost['all_cached']} with all of the cached "
            f"prefix read, {cost['none_cached']} with none; the answer 15") in text


def test_show_diff_marks_the_part_that_breaks_the_cache(hango, api, demo):
    api.put(f"/v1/agents/{demo['agent']}/context-overrides",
            json=[{"part": "system:agent", "action": "replace",
                   "replacement": "Be terse: one short sentence, never a table."}])
    run = snapshot(api, demo, "?against=last")["diff"]["against"]["run"]
    result = hango("context", "show", "--session", demo["id"], "--diff", f"{run}:1")
    assert result.exit_code == 0, result.stderr
    rows = diff_rows(result.stdout)
    assert rows["system:agent"][0] == "changed"
    assert rows["system:agent"][-1] == "breaks the cached prefix"
    assert "system:agent (changed) breaks the earlier call's cached prefix" in result.stdout
    assert ok_json(hango("--json", "context", "show", "--session", demo["id"], "--diff",
                         f"{run}:1")) == snapshot(api, demo, f"?against={run}:1")


def test_show_diff_reports_the_servers_refusals(hango, demo):
    bad = hango("context", "show", "--session", demo["id"], "--diff", "turn-3")
    assert bad.exit_code == 1 and bad.stderr.startswith("error 400 invalid_query: ")
    none = hango("context", "show", "--session", demo["id"], "--diff", f"{uuid.uuid4()}:1")
    assert none.exit_code == 1 and none.stderr.startswith("error 404 not_found: ")
    refused = hango("context", "show", "--session", demo["id"], "--diff", "--full",
                    "message:1")
    assert refused.exit_code == 2 and "which has no diff" in refused.stderr


@pytest.mark.parametrize("args", [
    ("exclude", "message:05"), ("include", "bogus"), ("exclude", "tool:echo", "repair:1"),
    ("try", "--exclude", "message:"), ("try", "--replace", "system:agent"),
    ("try", "--replace", "message:3=a", "--replace", "message:3=b"),
])
def test_a_bad_part_is_refused_before_any_request(hango, args):
    # Nothing listens at the URL: a request would end in "cannot connect".
    result = hango("context", *args, "--session", "s",
                   env={"HANGO_API_URL": f"http://127.0.0.1:{free_port()}"})
    assert result.exit_code == 2
    assert "Error: Invalid value for" in result.stderr
    assert "cannot connect" not in result.stderr


def test_an_unknown_session_is_404(hango, demo):
    missing = str(uuid.uuid4())
    for args in (("show",), ("exclude", "message:2"), ("exclude", "tool:echo"),
                 ("include", "summary"), ("try",)):
        result = hango("context", *args, "--session", missing)
        assert result.exit_code == 1, args
        assert result.stderr.startswith("error 404 not_found: "), (args, result.stderr)
        assert result.stdout == ""


def settings_shown(lines: list[str]) -> dict[str, tuple[str, str]]:
    """The model settings table read back: each setting's value and where it came from."""
    start = lines.index("model settings")
    rows = {}
    for line in lines[start + 1:]:
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) == 3 and cells[0] != "setting":
            rows[cells[0]] = (cells[1], cells[2])
    return rows


def test_show_prints_each_model_setting_and_where_it_came_from(hango, api, demo):
    api.patch(f"/v1/agents/{demo['agent']}", json={"config": {"model_settings": {
        "max_output_tokens": 512, "temperature": 0.2, "stop": ["END"],
        "tool_choice": "auto"}}}).raise_for_status()
    body = snapshot(api, demo)["model_settings"]
    result = hango("context", "show", "--session", demo["id"])
    assert result.exit_code == 0, result.stderr
    # Wide enough that no cell folds: each row on one line.
    rows = settings_shown([line.rstrip() for line in result.stdout.splitlines()])
    window = body["context_window_source"]
    assert rows == {
        "context_window": (f"{body['context_window']:,} tokens", SOURCES[window]),
        "max_output_tokens": ("512 tokens", "agent: its config sets it"),
        "temperature": ("0.2", "agent: its config sets it"),
        "top_p": ("not sent", "default: not sent, the server decides"),
        "stop": ('["END"]', "agent: its config sets it"),
        "tool_choice": ("auto", "agent: its config sets it"),
        "parallel_tool_calls": ("not sent", "default: not sent, the server decides"),
        "reasoning_effort": ("not sent", "default: not sent, the server decides"),
    }


def test_show_says_a_window_is_a_guess_for_a_model_hango_does_not_know(hango, api, demo):
    api.patch(f"/v1/agents/{demo['agent']}",
              json={"model": "openai:my-own-model"}).raise_for_status()
    assert snapshot(api, demo)["model_settings"]["context_window_source"] == "default"
    result = hango("context", "show", "--session", demo["id"])
    assert result.exit_code == 0, result.stderr
    rows = settings_shown([line.rstrip() for line in result.stdout.splitlines()])
    assert rows["context_window"][1] == SOURCES["default"]
    assert rows["max_output_tokens"][1].startswith("default: hango's 4,096")
