"""``hango chat`` at a real terminal (a pseudo terminal driven by pexpect) against hango under
gunicorn with a real Celery worker: a conversation followed live, an approval answered in place,
Ctrl-C cancelling a run, and a cancelled run resumed to an answer that agrees with its plan."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import httpx
import pexpect
import pytest
from click.testing import CliRunner

from cli.main import cli
from runs.models import Message, Run
from tests.support import workers
from tests.support.api import HITL
from tests.support.servers import ROOT, GunicornProcess
from tests.support.workers import WorkerProcess

pytestmark = pytest.mark.slow

MESSAGE = "count these four words"
ANSWER = f'You said: "{MESSAGE}". It has 4 words. All planned steps are done.'
PROMPT = "you> "


def serve(broker: str, tmp_path) -> GunicornProcess:
    # Threads: a follower's stream and the chat's other requests at once, as `make serve`'s two
    # workers (or runserver's threads) allow.
    return GunicornProcess(tmp_path, database_url=workers.test_database_url(), threads=4, env={
        "CELERY_BROKER_URL": broker, "HANGO_RUN_INLINE": "0", "HANGO_EVENT_POLL_SECONDS": "0.1"})


def serve_beside(worker: WorkerProcess, broker: str, tmp_path) -> GunicornProcess:
    """gunicorn started while ``worker`` boots (each takes seconds of its own), once both are
    ready."""
    served = serve(broker, tmp_path)
    try:
        worker.wait_for(lambda log: " ready." in log, what="worker ready")
    except BaseException:  # never left running by a test that could not use it
        served.stop()
        raise
    return served


@pytest.fixture
def server(alice, broker, start_worker, tmp_path) -> Iterator[GunicornProcess]:
    """gunicorn on the test database and the suite's Redis, and one worker whose demo model
    takes 0.4 s a call (time to press Ctrl-C mid-run)."""
    served = serve_beside(start_worker(HANGO_SCRIPTED_DELAY_MS="400", ready=False), broker,
                          tmp_path)
    yield served
    served.stop()


@pytest.fixture
def writing_server(alice, broker, start_worker, tmp_path) -> Iterator[GunicornProcess]:
    """The same, whose demo model writes a word every 0.1 s (time to press Ctrl-C while it
    writes its answer)."""
    served = serve_beside(start_worker(HANGO_SCRIPTED_WORD_DELAY_MS="100", ready=False), broker,
                          tmp_path)
    yield served
    served.stop()


def make_agent(server: GunicornProcess, key: str, **body) -> str:
    response = httpx.post(f"{server.url}/v1/agents", headers={"Authorization": f"Bearer {key}"},
                          json={"name": "demo", "model": "scripted:demo", **body})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def spawn(server: GunicornProcess, key: str, *args: str) -> pexpect.spawn:
    env = {**os.environ, "HANGO_API_URL": server.url, "HANGO_API_KEY": key, "NO_COLOR": "1"}
    child = pexpect.spawn(sys.executable, ["-m", "cli", *args], cwd=str(ROOT), env=env,
                          encoding="utf-8", timeout=30, dimensions=(40, 200))
    return child


def chat_sent(child: pexpect.spawn) -> str:
    """The session a new chat opened, once its first message is sent and its run has begun."""
    child.expect(r"in session (\S+)\.")
    session = child.match.group(1)
    child.expect_exact(PROMPT)
    child.sendline(MESSAGE)
    child.expect_exact("Let me plan this.")
    return session


def test_chat_streams_a_run_and_answers_an_approval_in_place(alice, server):
    agent = make_agent(server, alice.key, config={"interrupt_on": {"word_count": HITL}})
    child = spawn(server, alice.key, "chat", "--agent", agent)
    try:
        session = chat_sent(child)
        child.expect_exact("  [>] Read the request")
        child.expect_exact(f'→ word_count {{"text": "{MESSAGE}"}}')
        child.expect_exact(f'? approve tool call word_count {{"text": "{MESSAGE}"}}')
        child.expect_exact("approve/edit/reject/respond [approve]: ")
        child.sendline("ed")  # a prefix names the decision
        child.expect_exact("new arguments (a JSON object)")
        child.sendline("[1]")  # not an object: asked again
        child.expect_exact("the arguments are a JSON object")
        child.sendline('{"text": "just two"}')
        child.expect_exact("← word_count: 2")
        child.expect_exact("  [x] Write the answer")
        child.expect_exact(f'You said: "{MESSAGE}". It has 2 words. All planned steps are done.')
        child.expect(r"\(completed in 6 turns; \d+ input, \d+ output tokens\)")
        child.expect_exact(PROMPT)
        child.sendline("/quit")
        child.expect_exact(f"Go on later with: hango chat --session {session}")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before
    # What ran is what was approved in place.
    calls = [b for m in Message.objects.filter(session_id=session) for b in m.content
             if b["type"] == "tool_use" and b["name"] == "word_count"]
    results = [b["content"] for m in Message.objects.filter(session_id=session)
               for b in m.content if b["type"] == "tool_result"]
    assert len(calls) == 1 and "2" in results


def test_ctrl_c_cancels_a_run_which_resumes_to_an_answer_that_agrees_with_its_plan(alice,
                                                                                   server):
    agent = make_agent(server, alice.key)
    child = spawn(server, alice.key, "chat", "--agent", agent)
    try:
        session = chat_sent(child)
        child.sendintr()
        child.expect_exact("Cancelling the run (Ctrl-C again leaves the chat)")
        child.expect(r"The run was cancelled\. Resume it with: hango runs resume (\S+)\r\n")
        run_id = child.match.group(1)
        child.expect_exact(PROMPT)
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before
    cancelled = Run.objects.get(pk=run_id)
    assert cancelled.status == "cancelled" and cancelled.turn < 5

    env = {"HANGO_API_URL": server.url, "HANGO_API_KEY": alice.key}
    resumed = CliRunner().invoke(cli, ["runs", "resume", run_id, "--follow"], env=env)
    assert resumed.exit_code == 0, resumed.output
    assert ANSWER in resumed.stdout.splitlines()
    run = Run.objects.get(pk=run_id)
    assert [t["status"] for t in run.state_json["todos"]] == ["completed"] * 3
    last = Message.objects.filter(session_id=session).order_by("-seq").first()
    assert last is not None and last.content == [{"type": "text", "text": ANSWER}]


def test_ctrl_c_during_the_last_answer_stops_it(alice, writing_server):
    # A cancel aborts a streamed model call in flight (issue 36): the last answer, half written,
    # is not kept, and the chat says how to resume.
    agent = make_agent(writing_server, alice.key)
    child = spawn(writing_server, alice.key, "chat", "--agent", agent)
    try:
        chat_sent(child)
        child.expect_exact("You said: ")  # the last turn's model call is under way
        child.sendintr()
        child.expect_exact("Cancelling the run (Ctrl-C again leaves the chat)")
        child.expect(r"The run was cancelled\. Resume it with: hango runs resume (\S+)")
        run_id = child.match.group(1)
        child.expect_exact(PROMPT)
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before
    run = Run.objects.get(pk=run_id)
    assert run.status == "cancelled"
    assert not [b for m in Message.objects.filter(session_id=run.session_id)
                for b in m.content if b.get("text", "").startswith("You said: ")]
