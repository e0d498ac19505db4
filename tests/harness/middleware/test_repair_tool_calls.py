"""RepairToolCallsMiddleware: every call answered, no orphan result, idempotent, valid kept."""

from __future__ import annotations

import random

import pytest

from harness import telemetry
from harness.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from harness.middleware.repair_tool_calls import (
    INTERRUPTED,
    RepairToolCallsMiddleware,
    repair_history,
)
from harness.state import State
from tests.support.harness import events_named


def user(*blocks) -> Message:
    return Message(role="user", content=tuple(blocks))


def assistant(*blocks) -> Message:
    return Message(role="assistant", content=tuple(blocks))


def t(s: str) -> TextBlock:
    return TextBlock(text=s)


def use(i: str) -> ToolUseBlock:
    return ToolUseBlock(id=i, name="echo", input={"text": i})


def ok(i: str) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=i, content=f"result {i}")


def lost(i: str) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=i, content=INTERRUPTED, is_error=True)


VALID = [
    user(t("q")),
    assistant(t("calling"), use("a"), use("b")),
    user(ok("a"), ok("b")),
    assistant(t("answer")),
    user(t("next question")),
]

CASES = {
    "dangling tool_use at the end": (
        [user(t("q")), assistant(use("a"), use("b"))],
        [user(t("q")), assistant(use("a"), use("b")), user(lost("a"), lost("b"))],
        2,
    ),
    "dangling before a new user text: results first": (
        [user(t("q")), assistant(use("a")), user(t("continue"))],
        [user(t("q")), assistant(use("a")), user(lost("a"), t("continue"))],
        1,
    ),
    "one of two answered": (
        [user(t("q")), assistant(use("a"), use("b")), user(ok("b"))],
        [user(t("q")), assistant(use("a"), use("b")), user(lost("a"), ok("b"))],
        1,
    ),
    "orphan tool_result dropped, text kept": (
        [user(t("q")), assistant(t("hi")), user(ok("zz"), t("thanks"))],
        [user(t("q")), assistant(t("hi")), user(t("thanks"))],
        1,
    ),
    "a message of only orphans disappears": (
        [user(ok("zz")), user(t("q")), assistant(t("hi"))],
        [user(t("q")), assistant(t("hi"))],
        1,
    ),
    "two assistant messages in a row": (
        [user(t("q")), assistant(use("a")), assistant(use("b")), user(ok("b"))],
        [user(t("q")), assistant(use("a")), user(lost("a")), assistant(use("b")), user(ok("b"))],
        1,
    ),
    "a second result for the same call is dropped": (
        [user(t("q")), assistant(use("a")), user(ok("a"), lost("a"))],
        [user(t("q")), assistant(use("a")), user(ok("a"))],
        1,
    ),
    "a result answering an older call is an orphan": (
        [user(t("q")), assistant(use("a")), user(ok("a")), assistant(use("b")), user(ok("a"))],
        [user(t("q")), assistant(use("a")), user(ok("a")), assistant(use("b")), user(lost("b"))],
        2,
    ),
}


@pytest.mark.parametrize(("history", "expected", "changes"), CASES.values(), ids=CASES.keys())
def test_repairs(history, expected, changes):
    assert repair_history(history) == (expected, changes)


@pytest.mark.parametrize("history", [VALID, [], [user(t("only a question"))]],
                         ids=["conversation", "empty", "question"])
def test_a_valid_history_is_untouched(history):
    repaired, changes = repair_history(history)
    assert changes == 0
    assert repaired == history


@pytest.mark.parametrize("history", [c[0] for c in CASES.values()], ids=CASES.keys())
def test_repairing_twice_is_repairing_once(history):
    once, _ = repair_history(history)
    twice, changes = repair_history(once)
    assert twice == once
    assert changes == 0


def assert_valid(messages: list[Message]) -> None:
    """Every tool_use answered exactly once by the next message; every result answers one."""
    for i, message in enumerate(messages):
        if message.role == "assistant":
            if i > 0:
                assert messages[i - 1].role == "user" or not messages[i - 1].tool_uses
            ids = [u.id for u in message.tool_uses]
            if ids:
                following = messages[i + 1]
                assert following.role == "user"
                assert sorted(r.tool_use_id for r in following.tool_results) == sorted(ids)
        else:
            asked = {u.id for u in messages[i - 1].tool_uses} if i > 0 else set()
            assert {r.tool_use_id for r in message.tool_results} <= asked
            assert message.content


def random_history(rng: random.Random) -> list[Message]:
    """A history with random gaps: unanswered calls, orphans, repeats, missing turns."""
    history: list[Message] = []
    ids = [f"id{n}" for n in range(6)]
    for _ in range(rng.randint(0, 8)):
        if rng.random() < 0.5:
            blocks = [use(i) for i in rng.sample(ids, rng.randint(0, 3))]
            history.append(assistant(*([t("a")] if not blocks or rng.random() < 0.3 else []),
                                     *blocks))
        else:
            results = [ok(rng.choice(ids)) for _ in range(rng.randint(0, 3))]
            texts = [t("u")] if not results or rng.random() < 0.5 else []
            history.append(user(*results, *texts))
    return history


@pytest.mark.parametrize("seed", range(200))
def test_property_any_history_repairs_to_a_valid_fixed_point(seed):
    history = random_history(random.Random(seed))
    repaired, _ = repair_history(history)
    assert_valid(repaired)
    assert repair_history(repaired) == (repaired, 0)
    # Nothing the model or the user said is lost: every text and tool_use survives, in order.
    kept = [b for m in repaired for b in m.content if not isinstance(b, ToolResultBlock)]
    assert kept == [b for m in history for b in m.content if not isinstance(b, ToolResultBlock)]


def test_before_run_repairs_the_working_history_and_records_it(spans):
    state = State(messages=[user(t("q")), assistant(use("a"))])
    with telemetry.span("test.run"):
        RepairToolCallsMiddleware().before_run(state)
    assert state.messages[-1] == user(lost("a"))
    (event,) = events_named(spans, telemetry.EVENT_HISTORY_REPAIRED)
    assert event.attributes[telemetry.ATTR_REASON] == "1 blocks"


def test_before_run_leaves_a_valid_history_alone(spans):
    messages = list(VALID)
    state = State(messages=messages)
    with telemetry.span("test.run"):
        RepairToolCallsMiddleware().before_run(state)
    assert state.messages is messages and state.messages == VALID
    assert events_named(spans, telemetry.EVENT_HISTORY_REPAIRED) == []
