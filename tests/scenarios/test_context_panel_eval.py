"""Evaluate this selection, in real Chromium against hango under gunicorn with a real Celery
worker: the panel runs an eval suite with the selection (a tool left out, unsaved) and without
it, follows both, and shows each case's verdict and the comparison — the case that needs the
tool regressed, the one that expects its absence fixed — while the session, the agent, its
versions and every stored override stay as they were. Errors (no suites, a suite without cases,
a quota refusal) are messages in the panel, which goes on working."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from playwright.sync_api import expect

from accounts.models import Tenant
from agents.models import Agent, AgentVersion
from context.models import ContextOverride
from evals.models import EvalCaseResult, EvalRun
from hango_project.celery import app as celery_app
from runs.models import Message, Run, Session
from tests.support import workers
from tests.support.broker import broker_url, celery_broker
from tests.support.browser import screenshot, watch_errors
from tests.support.evals import make_suite
from tests.support.panel import open_panel, settled, staff
from tests.support.servers import GunicornProcess

pytestmark = pytest.mark.slow

# scripted:calls makes the calls its user asks for, then reports each result: with tool:echo
# left out of the request, the call comes back as an error ("There is no tool named 'echo'").
CASES = [
    {"name": "echoes", "turns": ['call echo {"text": "hi there"}'],
     "graders": [{"type": "contains", "value": "- echo: hi there"}]},
    {"name": "does without echo", "turns": ['call echo {"text": "x"}'],
     "graders": [{"type": "contains", "value": "echo (error)"}]},
]


@pytest.fixture(scope="module")
def stack(tmp_path_factory, django_db_setup) -> Iterator[tuple[GunicornProcess, str]]:
    """One gunicorn and one worker for the module, both on the suite's Redis (emptied first):
    the eval runs the panel starts go through the broker to the worker."""
    url = broker_url()
    redis.Redis.from_url(url).flushdb()
    logs = tmp_path_factory.mktemp("panel-eval")
    worker = workers.WorkerProcess("panel-eval", url, logs, env={})
    try:
        web = GunicornProcess(logs, database_url=workers.test_database_url(), threads=2,
                              env={"CELERY_BROKER_URL": url, "HANGO_RUN_INLINE": "0"})
    except BaseException:
        worker.stop()
        raise
    yield web, url
    web.stop()
    worker.stop()


@pytest.fixture
def web(stack, transactional_db, hango_settings) -> Iterator[GunicornProcess]:
    """The module's gunicorn; the test's own API calls enqueue on the same broker."""
    server, url = stack
    assert server.proc.poll() is None, f"gunicorn exited:\n{server.log()}"
    hango_settings(run_inline=False, broker_url=url)
    with celery_broker(celery_app, url):
        yield server


def _session(alice, make_agent) -> Session:
    agent = make_agent(alice, model="scripted:calls", system_prompt="You call tools.")
    session = Session.objects.create(tenant_id=alice.member.tenant_id, agent_id=agent["id"],
                                     member=alice.member, title="echo things")
    Message.objects.create(session=session, seq=1, role="user",
                           content=[{"type": "text", "text": "Say hello."}])
    Message.objects.create(session=session, seq=2, role="assistant",
                           content=[{"type": "text", "text": "Hello."}])
    return session


def _stored(session: Session) -> dict[str, Any]:
    """Everything evaluating must leave alone: the session's row, messages and runs, the agent's
    row and versions, every stored override."""
    return {
        "session": Session.objects.filter(pk=session.pk).values().get(),
        "messages": list(Message.objects.filter(session=session).order_by("seq").values()),
        "runs": list(Run.objects.filter(session=session).values_list("id", flat=True)),
        "agent": Agent.objects.filter(pk=session.agent_id).values().get(),
        "versions": list(AgentVersion.objects.filter(agent_id=session.agent_id)
                         .order_by("number").values_list("number", "content_hash")),
        "overrides": list(ContextOverride.objects.order_by("id").values()),
    }


def test_evaluate_the_selection_against_the_agent_without_it(page, web, alice, make_agent,
                                                             tenant):
    session = _session(alice, make_agent)
    suite = make_suite(alice, *CASES, name="echo suite")
    before = _stored(session)
    errors = watch_errors(page)
    open_panel(page, web, staff("kim@acme.test", tenant), session)
    settled(page)
    page.get_by_text("Evaluate this selection", exact=True).click()  # the folded card opens
    expect(page.locator("#cp-eval-suite")).to_have_value(suite["id"])
    expect(page.locator("#cp-eval-suite option:checked")).to_have_text("echo suite (2 cases)")

    page.locator('tr[data-part="tool:echo"] input[type=checkbox]').uncheck()
    settled(page)
    page.locator("#cp-eval-start").click()
    card = page.locator("#cp-eval")
    expect(card).to_have_attribute("data-state", "done", timeout=180_000)

    expect(page.locator("#cp-eval-status")).to_have_text(
        "Done: with the selection 2 of 2 cases done; the baseline 2 of 2 cases done.")
    echoes = page.locator('#cp-eval-cases li[data-case="echoes"]')
    expect(echoes).to_have_attribute("data-status", "failed")
    reason = echoes.locator(".cp-eval-reason")
    expect(reason).to_contain_text("contains: the answer \"Made 1 call:")
    expect(reason).to_contain_text("echo (error): There is no tool named 'echo'")
    expect(reason).to_contain_text('does not contain "- echo: hi there"')
    without = page.locator('#cp-eval-cases li[data-case="does without echo"]')
    expect(without).to_have_attribute("data-status", "passed")
    expect(without.locator(".cp-eval-reason")).to_have_count(0)
    expect(page.locator("#cp-eval-summary")).to_contain_text("pass rate 50% (1 of 2 passed")
    expect(page.locator('#cp-eval-changes li[data-change="regressed"]')).to_have_text(
        "regressed: echoes (passed → failed)")
    expect(page.locator('#cp-eval-changes li[data-change="fixed"]')).to_have_text(
        "fixed: does without echo (failed → passed)")
    expect(page.locator("#cp-eval-deltas")).to_contain_text("pass rate 50% → 50%")

    # Two eval runs on the session's agent and version: the selection's, the tool left out
    # (never saved), and the baseline's, without it.
    head, base = (EvalRun.objects.get(overrides=overrides) for overrides in (
        [{"part": "tool:echo", "action": "exclude", "replacement": None}], []))
    assert str(head.agent_id) == str(base.agent_id) == str(session.agent_id)
    assert head.version == base.version == before["agent"]["version"]
    assert {head.status, base.status} == {"completed"}
    # Each case links to its run's page, and shows its tokens.
    for result in EvalCaseResult.objects.filter(eval_run=head):
        item = page.locator(f'#cp-eval-cases li[data-case="{result.case_name}"]')
        expect(item.locator("a.cp-eval-run")).to_have_attribute(
            "href", f"/admin/runs/run/{result.run_id}/change/")
        expect(item).to_contain_text(f"{result.input_tokens + result.output_tokens:,} tokens")
    # The selection is still the panel's, unsaved; nothing stored changed.
    expect(page.locator("#cp-dirty")).to_have_text("Unsaved changes.")
    assert _stored(session) == before
    screenshot(page, "context-panel-eval.png")
    assert errors == []


def test_no_suite_an_empty_one_or_a_spent_quota_is_a_message(page, web, alice, make_agent, tenant):
    session = _session(alice, make_agent)
    errors = watch_errors(page)
    open_panel(page, web, staff("kim@acme.test", tenant), session)
    settled(page)
    page.get_by_text("Evaluate this selection", exact=True).click()
    expect(page.locator("#cp-eval-status")).to_contain_text("The tenant has no eval suites yet")
    expect(page.locator("#cp-eval-start")).to_be_disabled()

    make_suite(alice, name="empty")
    page.reload()
    settled(page)
    page.get_by_text("Evaluate this selection", exact=True).click()
    expect(page.locator("#cp-eval-suite option:checked")).to_have_text("empty (0 cases)")
    page.locator("#cp-eval-start").click()
    expect(page.locator("#cp-eval-status")).to_have_text(
        "Not evaluated: The suite has no cases to run.")
    expect(page.locator("#cp-eval-status")).to_have_class("cp-status cp-error")
    expect(page.locator("#cp-eval-start")).to_be_enabled()

    # A quota that cannot start a run refuses the eval run at once (402), said in the panel.
    make_suite(alice, CASES[0], name="smoke")
    Tenant.objects.filter(pk=tenant.pk).update(token_quota=1)
    page.reload()
    settled(page)
    page.get_by_text("Evaluate this selection", exact=True).click()
    page.locator("#cp-eval-suite").select_option(label="smoke (1 case)")
    page.locator("#cp-eval-start").click()
    expect(page.locator("#cp-eval-status")).to_contain_text("Not evaluated: ")
    expect(page.locator("#cp-eval-status")).to_contain_text("a run reserves")
    assert not EvalRun.objects.exists()
    # The panel goes on working: a part left out is still previewed by the server.
    page.locator('tr[data-part="tool:echo"] input[type=checkbox]').uncheck()
    settled(page)
    expect(page.locator("#cp-dirty")).to_have_text("Unsaved changes.")
    # The browser logs the refused requests themselves; nothing else went wrong.
    assert [e for e in errors if not re.search(r"status of 4(22|02)", e)] == []
