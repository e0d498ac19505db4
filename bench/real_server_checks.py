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
TOOL = "Use the echo tool to repeat the words: the tide is high."
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
                              settings={"max_output_tokens": 40, "temperature": 0})
        self.tools = api.agent("real-tools", model, tools=["echo"], max_turns=2,
                               settings={"max_output_tokens": 64, "temperature": 0,
                                         "tool_choice": {"name": "echo"}})
        self.long = api.agent("real-long", model, tools=[],
                              settings={"max_output_tokens": 400, "temperature": 0.8})
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
        counted = all(i > 0 and o > 0 for i, o in used) and sources <= {"provider", "counted"}
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
        name = f"tool call round trip, {'streamed' if how == 'streamed' else 'not streamed'}"
        session = self.api.session(self.tools)
        run = self.api.post(session, TOOL)
        row = self.api.wait(run)
        events = self.api.events(run)
        results = [e["data"] for e in events if e["type"] == "tool.result"]
        failed = [e["data"] for e in events if e["type"] == "model.failed"]
        calls = self.api.usage(run)
        error = row.get("error") or {}
        # tool_choice names echo, so every call calls it: the run stops at max_turns (2) once
        # the second call, which carried the first call's result, was answered.
        ok = (any(r["name"] == "echo" and not r["is_error"] for r in results) and len(calls) >= 2
              and not failed and (row["status"] == "completed" or error.get("code") == "max_turns"))
        self.row(name, ok, f"{len(results)} echo results, {len(calls)} model calls "
                 f"(usage {sorted({c['usage_source'] for c in calls})}), run {row['status']}"
                 f"{' (' + error.get('code', '') + ')' if error else ''}"
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
        self.row("inspector parts vs server tokenize", near(ours, theirs),
                 f"{n} parts: inspector {ours} (counted {snap['counted']}), server {theirs} "
                 f"(/extras/tokenize), ratio {ratio(ours, theirs)}")

    def total_counted(self) -> None:
        snap = self.api.snapshot(self.chat_session)
        tried = self.api.send("POST", f"/v1/sessions/{self.chat_session}/context/try", {})
        theirs = int(tried["usage"]["input_tokens"])
        ours = int(snap["totals"]["after"])
        self.row("inspector total vs server prompt", near(ours, theirs),
                 f"next call: inspector {ours} ({snap['counted']}), server's prompt_tokens "
                 f"{theirs} (a context try, answered whole), ratio {ratio(ours, theirs)}")

    def provider_count(self) -> None:
        snap = self.api.snapshot(self.chat_session, provider=True)
        counted = snap["counted"]
        if counted == self.api.snapshot(self.chat_session)["counted"]:
            self.row("provider count", None,
                     f"not available ({counted}): ?counted=provider fell back to the estimate")
            return
        tried = self.api.send("POST", f"/v1/sessions/{self.chat_session}/context/try", {})
        theirs, ours = int(tried["usage"]["input_tokens"]), int(snap["totals"]["after"])
        self.row("provider count", near(ours, theirs),
                 f"counted {counted}: {ours} vs the server's prompt_tokens {theirs}, ratio "
                 f"{ratio(ours, theirs)}")

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
        self.row("server stopped mid-answer", row["status"] == "failed" and short,
                 f"killed after {seen.deltas} deltas: run {row['status']}, "
                 f"{error.get('code')}: {message[:140]!r} ({len(message)} chars)")
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
