"""A tool result's images in PostgreSQL: a run's turn stores them in the message row and a
paused batch's finished call keeps them in ``state_json``, through an approval and through a
cancel's close; a client may post them in a tool_result, and one that cannot be sent is refused
with a 422."""

from __future__ import annotations

import pytest

from harness.loop import Loop
from harness.messages import Message as HMessage
from harness.messages import Response, ToolUseBlock
from harness.providers.scripted import ScriptedModel, text
from harness.serde import image_from_json, image_to_json
from harness.steps import FinalOutput, Interrupted
from harness.tools import Tool, ToolResult
from runs.execution.assembly import build_execution
from runs.execution.checkpointer import DbCheckpointer, DbControl
from runs.execution.fence import Claim
from runs.execution.history import session_history
from runs.execution.worker import claim_run
from runs.models import Message, Run, RunStatus
from tests.support.api import HITL, error_of
from tests.support.history import assert_valid_history
from tests.support.images import image, png_image
from tests.support.runs import timings

pytestmark = pytest.mark.django_db(transaction=True)

SHOT = png_image(320, 240)
BATCH = Response(message=HMessage(role="assistant", content=(
    ToolUseBlock(id="c1", name="echo", input={"text": "page"}),
    ToolUseBlock(id="c2", name="word_count", input={"text": "one two"}))), stop_reason="tool_use")


@pytest.fixture
def paused(alice, make_agent, make_session, in_process) -> Run:
    """A run whose batch paused on word_count after echo, answering with a screenshot, ran.
    Its task waits in Redis, where no worker takes it: the test drives the run."""
    agent = make_agent(alice, config={"interrupt_on": {"word_count": HITL}})
    session = make_session(alice, agent_id=agent["id"])
    posted = alice.client.post(f"/v1/sessions/{session['id']}/messages", {"content": "look"},
                               format="json")
    assert posted.status_code == 202, posted.content
    assert drive(posted.json()["run"]["id"], BATCH) == Interrupted("paused")
    return Run.objects.get(pk=posted.json()["run"]["id"])


def drive(run_id: str, *steps: Response):
    """Claim the run and take it to its end or pause as a worker would, its model playing
    ``steps`` and its echo tool answering with a screenshot."""
    run = claim_run(run_id, "worker-a")
    assert run is not None
    built, state, next_seq = build_execution(run)
    screenshot = Tool(name="echo", description="A screenshot.", input_schema={"type": "object"},
                      fn=lambda args, ctx: ToolResult(content="the page", images=(SHOT,)))
    loop = Loop(agent=built.agent, chain=built.chain, provider=ScriptedModel(list(steps)),
                model=built.model, prints=built.prints,
                tools=[screenshot if t.name == "echo" else t for t in built.base_tools])
    given = timings()
    control = DbControl(Claim(run.pk, run.epoch), cancel_poll=given.cancel_poll)
    return loop.run(state, control=control,
                    checkpointer=DbCheckpointer(run, control, next_seq, deadline=float("inf"),
                                                lease=given.lease))


def test_a_paused_batch_keeps_the_image_through_state_json_and_the_approval(alice, paused):
    done = Run.objects.get(pk=paused.pk).state_json["pending_batch"]["done"]
    assert [image_from_json(i) for i in done["c1"]["images"]] == [SHOT]
    approved = alice.client.post(f"/v1/runs/{paused.pk}/approve", {"decisions": [
        {"tool_use_id": "c2", "type": "approve"}]}, format="json")
    assert approved.status_code == 202, approved.content
    assert drive(str(paused.pk), text("I see a page.")) == FinalOutput("end_turn")
    *_, results, answer = session_history(paused.session_id)
    first, second = results.tool_results
    assert (first.content, first.images) == ("the page", (SHOT,))
    assert (second.content, second.images) == ("2", ())
    assert answer.text == "I see a page."
    assert Message.objects.get(session_id=paused.session_id, seq=results.seq).content[0][
        "images"] == [image_to_json(SHOT)]


def test_a_cancel_closes_the_batch_keeping_the_image(alice, paused):
    assert alice.client.post(f"/v1/runs/{paused.pk}/cancel").status_code == 202
    assert Run.objects.get(pk=paused.pk).status == RunStatus.CANCELLED
    closing = assert_valid_history(paused.session_id)[-1].content
    assert [(b["tool_use_id"], b["is_error"], b.get("images")) for b in closing] == [
        ("c1", False, [image_to_json(SHOT)]), ("c2", True, None)]


def tool_result(*images: dict) -> list[dict]:
    return [{"type": "tool_result", "tool_use_id": "c9", "content": "from my side",
             "images": list(images)}, {"type": "text", "text": "What is it?"}]


def test_a_posted_tool_result_may_carry_images_that_can_be_sent(alice, make_session,
                                                                 in_process):
    session = make_session(alice)
    url = f"/v1/sessions/{session['id']}/messages"
    posted = alice.client.post(url, {"content": tool_result(image_to_json(SHOT))}, format="json")
    assert posted.status_code == 202, posted.content
    [stored] = session_history(session["id"])
    assert stored.tool_results[0].images == (SHOT,)
    listed = alice.client.get(url).json()
    assert listed["results"][0]["content"][0]["images"] == [image_to_json(SHOT)]
    for bad, why in [
        ({"type": "image", "media_type": "image/svg+xml", "data": "PHN2Zy8+"},
         "image/svg+xml image: its data is not a PNG, JPEG, GIF or WebP image"),
        (image_to_json(image(SHOT.data.encode(), "image/jpeg")),
         "image/jpeg image: its data is not a PNG, JPEG, GIF or WebP image"),
        ({**image_to_json(SHOT), "media_type": "image/jpeg"},
         "image/jpeg image: its data is image/png"),
        ({"type": "image", "media_type": "image/png"}, "needs a string 'data'"),
    ]:
        refused = error_of(alice.client.post(url, {"content": tool_result(
            image_to_json(SHOT), bad)}, format="json"), 422)
        assert why in refused["message"], refused
        if "needs" not in why:
            assert refused["detail"]["content"] == [f"content[0].images[1]: {why}"]
    assert len(session_history(session["id"])) == 1
