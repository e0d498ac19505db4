"""RepeatCallMiddleware: the Nth identical call is answered with a reminder, never executed."""

from __future__ import annotations

import json
import re

import pytest

from harness import telemetry
from harness.deps import StackConfig
from harness.messages import Message
from harness.middleware.repeat_call import RepeatCallMiddleware, RepeatCounts, call_key
from harness.providers.scripted import ScriptedModel, text, tool_call
from harness.stack import default_stack
from harness.state import load_private, state_from_json, state_to_json
from harness.steps import FinalOutput
from tests.support.harness import CountingTool, events_named, make_agent, make_loop, run

ARGS = {"city": "Hanoi", "units": {"temp": "C", "wind": "kmh"}}
SAME_ARGS_REORDERED = {"units": {"wind": "kmh", "temp": "C"}, "city": "Hanoi"}
REMINDER = ("This exact call was already made 2 times; use the previous result or "
            "change approach.")


def lookup_calls(*args_list):
    return [tool_call("lookup", args, call_id=f"c{i}") for i, args in enumerate(args_list)]


def run_lookups(*args_list, threshold: int = 3, state=None):
    lookup = CountingTool(name="lookup")
    agent = make_agent()
    stack = default_stack(StackConfig(agent=agent, repeat_call_threshold=threshold))
    model = ScriptedModel([*lookup_calls(*args_list), text("done")])
    step, state, _ = run(make_loop(model, agent=agent, middlewares=stack, tools=[lookup.tool]),
                         state)
    results = [m.tool_results[0] for m in state.messages if m.tool_results]
    return lookup, results, state, step


def test_the_third_identical_call_is_blocked_with_the_reminder(spans):
    lookup, results, _, step = run_lookups(ARGS, SAME_ARGS_REORDERED, ARGS)
    assert len(lookup.calls) == 2
    assert [r.is_error for r in results] == [False, False, True]
    assert results[2].content == REMINDER
    assert "already made 2 times" in results[2].content
    assert step == FinalOutput("end_turn")
    (event,) = events_named(spans, telemetry.EVENT_REPEAT_CALL_BLOCKED)
    assert event.attributes[telemetry.ATTR_GEN_AI_TOOL_NAME] == "lookup"
    assert event.attributes[telemetry.ATTR_MIDDLEWARE_NAME] == "repeat_call"


def test_later_repeats_keep_being_blocked():
    lookup, results, _, _ = run_lookups(ARGS, ARGS, ARGS, ARGS)
    assert len(lookup.calls) == 2
    assert "already made 3 times" in results[3].content


def test_different_arguments_are_not_blocked(spans):
    variants = [ARGS, {**ARGS, "city": "Hue"}, {"city": "Hanoi"}, {**ARGS, "units": {}}]
    lookup, results, _, _ = run_lookups(*variants)
    assert len(lookup.calls) == 4
    assert not any(r.is_error for r in results)
    assert events_named(spans, telemetry.EVENT_REPEAT_CALL_BLOCKED) == []


def test_the_threshold_is_configurable():
    lookup, results, _, _ = run_lookups(ARGS, ARGS, threshold=2)
    assert len(lookup.calls) == 1
    assert "already made 1 times" in results[1].content


@pytest.mark.parametrize("threshold", [1, 0, -3, 2.5, "3", None])
def test_threshold_below_two_or_not_an_integer_is_rejected(threshold):
    with pytest.raises(ValueError):
        RepeatCallMiddleware(threshold=threshold)


def test_counts_survive_the_state_json_round_trip():
    lookup, results, first, _ = run_lookups(ARGS, SAME_ARGS_REORDERED)
    assert not any(r.is_error for r in results)
    counts, found = load_private(first, "repeat_call", RepeatCounts)
    assert found and list(counts.counts.values()) == [2]

    stored = json.loads(json.dumps(state_to_json(first)))
    resumed = state_from_json(stored, messages=[*first.messages, Message.user("Once more.")])
    again, results, _, _ = run_lookups(ARGS, state=resumed)
    assert again.calls == []  # the third call overall is blocked on the resumed run
    assert results[-1].content == REMINDER


def test_call_key_canonicalises_arguments():
    assert call_key("lookup", ARGS) == call_key("lookup", SAME_ARGS_REORDERED)
    assert call_key("lookup", ARGS) != call_key("other", ARGS)
    assert call_key("lookup", {"a": 1}) != call_key("lookup", {"a": "1"})
    assert len(call_key("lookup", ARGS)) == 11


@pytest.mark.parametrize(("name", "args", "expected"), [
    ("lookup", {}, "4Z1CjJ0-wII"),
    ("lookup", ARGS, "fW96OI1ZnHc"),
    ("lookup", SAME_ARGS_REORDERED, "fW96OI1ZnHc"),
    ("write_file", {"path": "/a.txt", "content": "héllo"}, "Ctx6CvPy9CU"),
])
def test_call_key_is_stable_across_processes_and_releases(name, args, expected):
    # Keys are checkpointed with the run and compared after a resume, possibly in another
    # worker: they must not depend on the process (as the salted built-in hash() does).
    key = call_key(name, args)
    assert key == expected
    assert re.fullmatch(r"[A-Za-z0-9_-]{11}", key)


def test_the_counters_keep_a_bounded_window_of_recent_calls():
    from harness.middleware.repeat_call import RepeatCounts

    counts = RepeatCounts()
    for i in range(10):
        counts.see(f"k{i}", window=4)
    assert list(counts.counts) == ["k6", "k7", "k8", "k9"]
    assert counts.see("k7", window=4) == 2  # seen again: now the most recent
    assert list(counts.counts)[-1] == "k7"
    assert counts.see("k0", window=4) == 1  # forgotten long ago: counts from one again
    assert len(counts.counts) == 4
