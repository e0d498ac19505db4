"""Model calls that end wrong, and answers that carry no usage, end to end: a real Celery
worker runs an agent on an OpenAI-compatible model served by a local server speaking its wire
format (and validating requests as llama-cpp-python's request model does). A request refused
as invalid is sent once and fails the run with a short error; a stream cut without its end
fails the run resumably and stores no answer; a cancel during a slow stream stops the call
within about a second, and the call's usage is recorded; a stream without usage is counted,
charged and held to the quota."""

from __future__ import annotations

import json

import pytest

from accounts.models import QuotaPeriod, Tenant, UsageRecord
from accounts.usage import period_bounds, tenant_spend
from harness.tokens.tokenizers import tokenizer_for
from runs.intake.services import RESUMABLE_ERRORS
from runs.models import Message, RunEvent
from tests.support import wire_models
from tests.support.api import started_run
from tests.support.replay import ReplayServer
from tests.support.runs import wait_for_run

pytestmark = pytest.mark.slow

KEY = "test-key"
MODEL = "openai:gemma-3-270m"


@pytest.fixture
def model_server():
    server = ReplayServer(validate=wire_models.llama_cpp_python)
    # What llama-cpp-python lists (no window): the web and the worker each ask once.
    server.always("/models", {"object": "list", "data": [
        {"id": "gemma-3-270m", "object": "model", "owned_by": "me", "permissions": []}]})
    yield server
    server.close()


@pytest.fixture
def worker(start_worker, model_server):
    return start_worker(OPENAI_BASE_URL=model_server.url, OPENAI_API_KEY=KEY,
                        HANGO_PROVIDER_MAX_RETRIES="2", HANGO_CANCEL_POLL_SECONDS="0.25")


def chunk(delta: dict, finish: str | None = None) -> str:
    return "data: " + json.dumps({
        "id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gemma-3-270m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"


def start(caller, make_agent, text: str = "Say something.", model: str = MODEL,
          ) -> tuple[str, str]:
    return started_run(caller, make_agent, model, text)


def events(run_id: str, kind: str) -> list[dict]:
    return [e.data for e in RunEvent.objects.filter(run_id=run_id, type=kind).order_by("seq")]


def test_a_request_refused_as_invalid_is_sent_once_and_fails_with_a_short_error(
        alice, make_agent, model_server, worker):
    model_server.validate = wire_models.refusing  # every request refused, as null content was
    _, run_id = start(alice, make_agent)

    run = wait_for_run(run_id)

    assert len(model_server.requests_to("/chat/completions")) == 1  # max_retries=2: not retried
    assert run.status == "failed"
    assert run.error["code"] == "provider_bad_request"
    assert run.error["code"] not in RESUMABLE_ERRORS
    message = run.error["message"]
    assert "\n" not in message and len(message) <= 200
    assert message.startswith("OpenAI API error (HTTP 500): ")
    [failed] = events(run_id, "model.failed")
    assert "Input should be a valid string" in failed["message"] and len(failed["message"]) > 500


def test_a_stream_cut_without_its_end_fails_resumably_and_stores_no_answer(
        alice, make_agent, model_server, worker):
    model_server.reply_sse((chunk({"role": "assistant", "content": ""})
                            + chunk({"content": "Half an"}) + chunk({"content": " answer"})
                            ).encode())
    session_id, run_id = start(alice, make_agent)

    run = wait_for_run(run_id)

    assert run.status == "failed", run.status
    assert run.error["code"] == "provider_unavailable" and run.error["code"] in RESUMABLE_ERRORS
    assert "after 2 deltas of the answer" in run.error["message"]
    assert not Message.objects.filter(session_id=session_id, role="assistant").exists()

    model_server.reply_sse((chunk({"role": "assistant", "content": ""})
                            + chunk({"content": "A whole answer."}, "stop")
                            + "data: [DONE]\n\n").encode())
    assert alice.client.post(f"/v1/runs/{run_id}/resume").status_code == 202
    run = wait_for_run(run_id)
    assert run.status == "completed", run.error


def test_a_cancel_stops_a_stream_under_way_and_records_its_usage(
        alice, make_agent, model_server, worker):
    words = "".join(chunk({"content": f" word{i}"}) for i in range(60))
    # A model that writes three events and then nothing until the test releases it: the run can
    # only end before that release because the cancel aborted the call (the provider's own
    # timeout, 120 s, is past the wait below).
    model_server.reply_sse((chunk({"role": "assistant", "content": ""}) + words
                            + chunk({}, "stop") + "data: [DONE]\n\n").encode(), hold_after=3)
    _, run_id = start(alice, make_agent)
    assert model_server.holding.wait(timeout=60), "the model was never called"

    assert alice.client.post(f"/v1/runs/{run_id}/cancel").status_code == 202
    run = wait_for_run(run_id, timeout=60)  # a guard against a hang only

    assert run.status == "cancelled"
    assert model_server.events_sent == 3  # it ended while the stream was still held
    model_server.release()
    assert model_server.client_left.wait(timeout=60)  # the server saw the client gone
    usage = alice.client.get(f"/v1/runs/{run_id}").json()["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    # Recorded once, as the call ended (runs/execution/call_ledger.py): the run's usage is its one
    # row.
    [row] = UsageRecord.objects.filter(run_id=run_id)
    assert row.usage_source == "estimated" and row.dedupe_key.endswith(":1:0")  # no tokenizer
    assert (row.input_tokens, row.output_tokens) == (usage["input_tokens"],
                                                     usage["output_tokens"])


def test_a_stream_without_usage_is_counted_charged_and_held_to_the_quota(
        alice, tenant, make_agent, model_server, worker):
    # The server ignores stream_options.include_usage, as llama-cpp-python does.
    model_server.reply_sse((chunk({"role": "assistant", "content": ""})
                            + chunk({"content": "Three words here."}, "stop")
                            + "data: [DONE]\n\n").encode())
    session_id, run_id = start(alice, make_agent, model="openai:gpt-4o-mini")
    run = wait_for_run(run_id)
    assert run.status == "completed", run.error

    [row] = UsageRecord.objects.filter(run_id=run_id)
    assert row.usage_source == "counted"
    assert row.input_tokens > 0
    assert row.output_tokens == tokenizer_for("openai:gpt-4o-mini").text("Three words here.")
    [api_row] = alice.client.get("/v1/usage", {"run": run_id}).json()["results"]
    assert api_row["usage_source"] == "counted"
    assert api_row["input_tokens"] == row.input_tokens
    api_run = alice.client.get(f"/v1/runs/{run_id}").json()["usage"]
    assert api_run["input_tokens"] == row.input_tokens > 0  # the run's sums, never zero
    # Charged to the tenant's month: a quota of exactly what was spent holds the next run.
    spent = tenant_spend(tenant.pk, period_bounds(QuotaPeriod.MONTH)[0])
    assert spent == row.input_tokens + row.output_tokens
    Tenant.objects.filter(pk=tenant.pk).update(token_quota=spent,
                                               quota_period=QuotaPeriod.MONTH)
    refused = alice.client.post(f"/v1/sessions/{session_id}/messages", {"content": "More."},
                                format="json")
    assert refused.status_code == 402
    assert refused.json()["error"]["detail"]["used"] == spent
