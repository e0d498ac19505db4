"""The checks of ``real_server.py``, each a row of its table: (name, result, detail), the result
``passed``, ``failed`` or ``n/a`` (what the server or hango's revision cannot show yet). A check
that raises is a failed row with the error; the others still run."""

from __future__ import annotations

import time
import traceback
import uuid
from collections.abc import Callable
from typing import Any

from bench.real_server_hango import Client, Stack
from bench.real_server_stack import LlamaServer

CHAT = "You are a helpful assistant. Answer in one short sentence."
LONG = "Write a long story about a lighthouse keeper and the sea, in many chapters."
TOOL = "Is the tide high? Answer with the pick tool."
# A client tool whose arguments the server's grammar closes at once: a base model fills a free
# text argument (echo's) until max_tokens, and its arguments arrive cut.
PICK = {"name": "pick", "description": "Answer yes or no.",
        "input_schema": {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}},
                         "required": ["answer"], "additionalProperties": False}}
NEAR = 0.25  # the inspector's estimate and the server's count differ by at most this fraction


def ratio(ours: int, theirs: int) -> str:
    return f"{ours / theirs:.2f}" if theirs else "-"


def near(ours: int, theirs: int) -> bool:
    return theirs > 0 and abs(ours - theirs) <= NEAR * theirs


class Checks:
    def __init__(self, *, server: LlamaServer, stack: Stack, api: Client, tenant: uuid.UUID,
                 model: str) -> None:
        self.server, self.stack, self.api, self.tenant, self.model = (server, stack, api, tenant,
                                                                      model)
        self.rows: list[tuple[str, str, str]] = []
        self.chat_session = ""
        self.server_parts = 0  # the server's count of the chat session's parts' texts

    def row(self, name: str, ok: bool | None, detail: str) -> None:
        self.rows.append((name, "n/a" if ok is None else "passed" if ok else "failed", detail))

    def guard(self, name: str, check: Callable[[], None]) -> None:
        try:
            check()
        except (Exception, SystemExit) as exc:  # a failed row; the other checks still run
            self.row(name, False, f"{type(exc).__name__}: {exc}"[:300])
            traceback.print_exc()

    def run_all(self) -> None:
        api, model = self.api, self.model
        self.chat = api.agent("real-chat", model, tools=[], system=CHAT,
                              settings={"max_output_tokens": 24, "temperature": 0})
        self.tools = api.agent("real-tools", model, tools=["pick"], max_turns=3,
                               client_tools=[PICK],
                               settings={"max_output_tokens": 48, "temperature": 0,
                                         "tool_choice": {"name": "pick"}})
        self.long = api.agent("real-long", model, tools=[],
                              settings={"max_output_tokens": 160, "temperature": 0.8})
        self.guard("streamed conversation", self.conversation_streamed)
        self.guard("context window", self.window)
        self.guard("tool call round trip, streamed", lambda: self.tool_round_trip("streamed"))
        self.guard("inspector parts vs server tokenize", self.parts_counted)
        self.guard("inspector total vs server prompt", self.total_counted)
        self.guard("provider count (?counted=provider)", self.provider_count)
        self.guard("server stopped mid-run", self.stopped_mid_run)
        self.stack.restart_worker(streamed=False)
        self.guard("whole answer, usage", self.conversation_whole)
        self.guard("tool call round trip, not streamed", lambda: self.tool_round_trip("whole"))
        self.guard("quota sees the usage", self.quota)

    # -- streamed ------------------------------------------------------------------------

    def conversation_streamed(self) -> None:
        session = self.chat_session = self.api.session(self.chat)
        answers, deltas, sources, used = [], 0, set(), []
        for text in ("Hello! What is the sea?", "And what is a lighthouse?"):
            run = self.api.post(session, text)
            deltas += self.api.follow(run).deltas
            row = self.api.wait(run)
            answers.append((row["status"], (row.get("output") or {}).get("text", "")))
            rows = self.api.usage(run)
            sources |= {r["usage_source"] for r in rows}
            used += [(r["input_tokens"], r["output_tokens"]) for r in rows]
        ok = all(s == "completed" and t.strip() for s, t in answers) and deltas > 0
        self.row("streamed conversation", ok,
                 f"2 messages, {[s for s, _ in answers]}, {deltas} live deltas; "
                 f"2nd answer {answers[-1][1][:60]!r}")
        counted = (all(i > 0 and o > 0 for i, o in used)
                   and sources <= {"provider", "counted", "estimated"})
        self.row("streamed usage and its source", counted and bool(sources),
                 f"usage_source {sorted(sources)}, calls' in/out {used}")

    def window(self) -> None:
        settings = self.api.snapshot(self.chat_session)["model_settings"]
        source, window = settings["context_window_source"], settings["context_window"]
        entry = next((m for m in self.server.models().get("data", [])), {})
        reported = sorted(k for k in entry if k not in ("id", "object", "owned_by", "permissions"))
        if source == "server":
            self.row("served context window", window == self.server.n_ctx,
                     f"context_window {window} (source server), server n_ctx "
                     f"{self.server.n_ctx}")
        elif not reported:
            self.row("served context window", None if source == "default" else False,
                     f"the server's /v1/models reports no context length (its entry has only "
                     f"id/object/owned_by/permissions): context_window {window}, source "
                     f"{source}; the agent can set it")
        else:
            self.row("served context window", False,
                     f"the server reports {reported} but the source is {source}")

    def tool_round_trip(self, how: str) -> None:
        """A call of the client tool (tool_choice names it), its result sent through the API,
        and the next call, which carries the call and its result, answered by the server."""
        name = f"tool call round trip, {'streamed' if how == 'streamed' else 'not streamed'}"
        run = self.api.post(self.api.session(self.tools), TOOL)
        parked = self.api.wait(run)
        action = parked.get("required_action") or {}
        calls = action.get("tool_calls") or []
        if parked["status"] != "requires_action" or not calls:
            self.row(name, False, f"no tool call: run {parked['status']} {parked.get('error')}")
            return
        self.api.send("POST", f"/v1/runs/{run}/tool-results", {"results": [
            {"tool_use_id": c["tool_use_id"], "output": "Noted."} for c in calls]})
        # tool_choice names pick, so every call calls it: the run parks again once the second
        # call, which carried the first call and its result, was answered.
        row = self.api.wait(run)
        failed = [e["data"] for e in self.api.events(run) if e["type"] == "model.failed"]
        used = self.api.usage(run)
        if row["status"] == "requires_action":
            self.api.send("POST", f"/v1/runs/{run}/cancel", {})
        stopped = (row.get("error") or {}).get("code") == "max_turns"
        ok = len(used) >= 2 and not failed and (
            row["status"] in ("requires_action", "completed") or stopped)
        self.row(name, ok, f"call 1: {calls[0]['name']} {calls[0].get('input')}; result sent, "
                 f"call 2 answered: run {row['status']}, {len(used)} model calls (usage "
                 f"{sorted({u['usage_source'] for u in used})})"
                 f"{'; model.failed: ' + failed[0].get('message', '')[:120] if failed else ''}")

    def parts_counted(self) -> None:
        snap = self.api.snapshot(self.chat_session)
        empty = self.server.count("")  # the BOS the endpoint adds to every text
        ours = theirs = n = 0
        for part in (*snap["system"], *snap["messages"]):
            text = self.api.part_text(self.chat_session, part["id"]) if part["included"] else ""
            if text:
                n += 1
                ours += part["tokens"]
                theirs += self.server.count(text) - empty
        self.server_parts = theirs
        self.row("inspector parts vs server tokenize", near(ours, theirs),
                 f"{n} parts: inspector {ours} (counted {snap['counted']}), server {theirs} "
                 f"(/extras/tokenize), ratio {ratio(ours, theirs)}")

    def total_counted(self) -> None:
        session, text = self.chat_session, "And what is a harbour?"
        snap = self.api.send("POST", f"/v1/sessions/{session}/context", {"message": text})
        tried = self.api.send("POST", f"/v1/sessions/{session}/context/try", {"message": text})
        theirs = int(tried["usage"]["input_tokens"])
        ours = int(snap["totals"]["after"])
        system = sum(p["tokens"] for p in snap["system"] if p["included"])
        self.row("inspector total vs server prompt", near(ours, theirs),
                 f"next call with a message: inspector {ours} ({snap['counted']}), the server's "
                 f"prompt_tokens {theirs} (a context try, answered whole), ratio "
                 f"{ratio(ours, theirs)}; without the system part ({system}), which the "
                 f"gemma chat format drops: {ratio(ours - system, theirs)}")

    def provider_count(self) -> None:
        snap = self.api.snapshot(self.chat_session, provider=True)
        counted = snap["counted"]
        if counted == self.api.snapshot(self.chat_session)["counted"]:
            self.row("provider count", None,
                     f"not available ({counted}): ?counted=provider fell back to the estimate")
            return
        # The same parts as parts_counted's, now counted by the server through hango; the
        # total adds the framing, which this server (it templates nothing on request) leaves to
        # the family's estimate: provider_count says so.
        ours = sum(int(p["tokens"]) for p in (*snap["system"], *snap["messages"])
                   if p["included"])
        theirs, said = self.server_parts, (snap.get("provider_count") or {}).get("fallback")
        self.row("provider count", near(ours, theirs),
                 f"counted {counted}: parts {ours} vs the server's tokenize of the parts "
                 f"{theirs}, ratio {ratio(ours, theirs)}; total {snap['totals']['after']}; "
                 f"fallback: {said or 'none'}")

    def stopped_mid_run(self) -> None:
        session = self.api.session(self.long)
        run = self.api.post(session, LONG)
        reached, seen = self.api.follow_in_background(run, until=lambda f: f.deltas >= 5)
        if not reached.wait(300) or seen.deltas < 5:
            raise RuntimeError(f"the answer never streamed 5 deltas ({seen.deltas})")
        self.server.kill()
        row = self.api.wait(run, timeout=600)
        error = row.get("error") or {}
        message = str(error.get("message", ""))
        short = bool(message) and "\n" not in message and len(message) <= 300
        # What happened: the answer was cut after some deltas, not "no response" (issue 36).
        said = "stream cut" in message and "no response" not in message
        self.row("server stopped mid-answer", row["status"] == "failed" and short and said,
                 f"killed after {seen.deltas} deltas: run {row['status']}, "
                 f"{error.get('code')}: {message[:200]!r} ({len(message)} chars)")
        started = time.monotonic()
        self.server.start()
        resumed = self.api.send("POST", f"/v1/runs/{run}/resume", {}, expect=(200, 202, 409))
        if "status" not in resumed or resumed.get("error"):
            self.row("resume after the server is back", False, f"resume refused: {resumed}")
            return
        row = self.api.wait(run, timeout=600)
        text = (row.get("output") or {}).get("text", "")
        self.row("resume after the server is back", row["status"] == "completed" and bool(text),
                 f"restarted in {time.monotonic() - started:.0f} s; run {row['status']}, "
                 f"{len(text)} chars, stop_reason {(row.get('output') or {}).get('stop_reason')}")

    # -- whole answers -------------------------------------------------------------------

    def conversation_whole(self) -> None:
        session = self.api.session(self.chat)
        run = self.api.post(session, "Hello! What is a harbour?")
        row = self.api.wait(run)
        rows = self.api.usage(run)
        text = (row.get("output") or {}).get("text", "")
        ok = (row["status"] == "completed" and bool(text.strip()) and bool(rows)
              and all(r["usage_source"] == "provider" and r["input_tokens"] > 0
                      and r["output_tokens"] > 0 for r in rows))
        self.row("whole answer, usage", ok,
                 f"run {row['status']} {text[:50]!r}; usage "
                 f"{[(r['usage_source'], r['input_tokens'], r['output_tokens']) for r in rows]}")

    def quota(self) -> None:
        from accounts.models import Tenant
        from accounts.usage import quota_state

        used = quota_state(Tenant.objects.get(pk=self.tenant)).used
        totals = self.api.totals()
        spent = sum(totals[k] for k in ("input_tokens", "output_tokens", "cache_read_tokens",
                                        "cache_write_tokens"))
        self.row("quota sees the usage", used == spent and spent > 0,
                 f"quota used {used}; usage rows {spent} tokens in {totals['calls']} calls")

    def summary(self) -> dict[str, Any]:
        return {name: result for name, result, _ in self.rows}
