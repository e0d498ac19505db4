"""harness.model_settings: one resolution of an agent's model settings — the agent's values over
the model table's, each guess named — that the request and the quota hold both use."""

from __future__ import annotations

import pytest

from harness.agent import config_problems
from harness.messages import Message
from harness.model_settings import ModelSettingsOptions, problems, resolve
from harness.providers.budgeted import Budgeted, worst_case
from harness.providers.scripted import ScriptedModel, text
from harness.state import State
from harness.tokens.base import ESTIMATE
from tests.support.harness import make_agent, make_loop, run


def options(**values) -> ModelSettingsOptions:
    return ModelSettingsOptions.model_validate(values)


@pytest.mark.parametrize(("model", "window", "source", "out"), [
    ("openai:gpt-4o-2024-08-06", 128_000, "model_table", 4096),
    ("anthropic:claude-3-haiku-20240307", 200_000, "model_table", 4096),
    ("openai:gemma-3-270m", 128_000, "default", 4096),  # a server's own model: a guess
    ("openai:gpt-4", 8_192, "model_table", 4096),
])
def test_the_model_table_or_the_providers_default_and_which_it_was(model, window, source, out):
    settings = resolve(model)
    assert (settings.context_window, settings.context_window_source) == (window, source)
    assert (settings.max_output_tokens, settings.max_output_tokens_source) == (out, "default")


def test_the_agent_sets_what_it_knows_better_and_a_server_beats_a_guess():
    mine = resolve("openai:gemma-3-270m", options(context_window=32_768, max_output_tokens=512))
    assert (mine.context_window, mine.context_window_source) == (32_768, "agent")
    assert (mine.max_output_tokens, mine.max_output_tokens_source) == (512, "agent")
    served = resolve("openai:gemma-3-270m", server_window=32_768)
    assert (served.context_window, served.context_window_source) == (32_768, "server")
    # A listed model keeps its row: a proxy's report does not override what is documented.
    assert resolve("openai:gpt-4o", server_window=4_096).context_window_source == "model_table"


def test_a_small_window_keeps_room_for_the_input():
    assert resolve("openai:tiny", options(context_window=2_048)).max_output_tokens == 1_024


@pytest.mark.parametrize(("values", "problem"), [
    ({"temperature": 2.5}, "temperature"),
    ({"top_p": -0.1}, "top_p"),
    ({"max_output_tokens": 0}, "max_output_tokens"),
    ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
    ({"tool_choice": "sometimes"}, "tool_choice"),
    ({"reasoning_effort": "extreme"}, "reasoning_effort"),
    ({"temperature": "0.5"}, "temperature"),  # never coerced
    ({"temprature": 0.5}, "temprature"),
])
def test_out_of_bounds_values_are_refused_by_name(values, problem):
    found = config_problems({"model_settings": values})
    assert found and all(problem in line for line in found), found


def test_what_fits_the_model_and_the_tools_is_checked_with_both():
    assert problems("openai:gpt-4o", options(max_output_tokens=20_000), offered=None) == [
        "model_settings/max_output_tokens: 20,000 is more than openai:gpt-4o gives one answer "
        "(16,384 tokens)."]
    assert problems("openai:mine", options(max_output_tokens=9_000, context_window=8_192),
                    offered=None)[0].endswith("(8,192 tokens, its window).")
    assert problems("anthropic:claude-sonnet-4-6", options(temperature=0.2, reasoning_effort=
                                                           "minimal"), offered=None) == [
        "model_settings/reasoning_effort: anthropic:claude-sonnet-4-6 takes one of high, low, "
        "max, medium, xhigh.",
        "model_settings/temperature: anthropic: models take no sampling parameters (the API "
        "refuses them)."]
    assert problems("openai:gpt-4o", options(tool_choice={"name": "ls"}),
                    offered=frozenset({"echo"})) == [
        "model_settings/tool_choice/name: 'ls' is not a tool the agent offers."]
    assert problems("openai:gpt-4o", options(tool_choice={"name": "echo"}),
                    offered=frozenset({"echo"})) == []


class Held:
    def __init__(self) -> None:
        self.tokens: list[int] = []

    def reserve(self, tokens: int) -> None:
        self.tokens.append(tokens)


def test_the_quota_holds_the_input_and_the_agents_max_output_tokens():
    held, model = Held(), ScriptedModel(steps=[text("done")])
    agent = make_agent(config={"model_settings": {"max_output_tokens": 300}})

    run(make_loop(Budgeted(model, held, ESTIMATE), agent=agent),
        State(messages=[Message.user("hi")]))

    [request] = model.calls
    assert request.max_tokens == 300
    assert held.tokens == [worst_case(request, ESTIMATE)] == [ESTIMATE.request(request) + 300]
