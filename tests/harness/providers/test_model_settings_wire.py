"""An agent's ``config.model_settings`` reach the wire: through the loop to the local
OpenAI-compatible and Anthropic servers, in each wire's own words, and nothing unset is sent."""

from __future__ import annotations

from dataclasses import replace

from harness.messages import Message, Request, ToolDef
from harness.model_settings import resolve
from harness.providers.anthropic import AnthropicProvider
from harness.providers.base import ProviderSettings
from harness.providers.openai_compat import OpenAICompatProvider
from harness.state import State
from tests.support.harness import make_agent, make_loop, run
from tests.support.replay import wire_json

ECHO = ToolDef(name="echo", description="Echo.", input_schema={"type": "object"})
SETTINGS = {"max_output_tokens": 321, "temperature": 0.3, "top_p": 0.9, "stop": ["END"],
            "tool_choice": {"name": "echo"}, "parallel_tool_calls": False,
            "reasoning_effort": "low"}


def openai_at(server) -> OpenAICompatProvider:
    return OpenAICompatProvider(settings=ProviderSettings(
        openai_api_key="k", openai_base_url=server.url, max_retries=0, timeout_seconds=5.0))


def anthropic_at(server) -> AnthropicProvider:
    return AnthropicProvider(settings=ProviderSettings(
        anthropic_api_key="k", anthropic_base_url=server.url, max_retries=0,
        timeout_seconds=5.0))


def test_an_agents_settings_reach_the_openai_compatible_wire_through_the_loop(server):
    server.reply(200, wire_json("openai_completion_text.json"))
    agent = make_agent(model="openai:my-gemma", allowed_tools=("echo",),
                       config={"model_settings": SETTINGS})

    run(make_loop(openai_at(server), agent=agent),
        State(messages=[Message.user("hi")]))

    body = server.requests[0].body
    assert body["max_tokens"] == 321
    assert (body["temperature"], body["top_p"], body["stop"]) == (0.3, 0.9, ["END"])
    assert body["tool_choice"] == {"type": "function", "function": {"name": "echo"}}
    assert body["parallel_tool_calls"] is False
    assert body["reasoning_effort"] == "low"


def test_unset_settings_are_not_sent_and_the_default_output_is_asked_for(server):
    server.reply(200, wire_json("openai_completion_text.json"))
    agent = make_agent(model="openai:my-gemma", allowed_tools=("echo",))

    run(make_loop(openai_at(server), agent=agent), State(messages=[Message.user("hi")]))

    body = server.requests[0].body
    assert body["max_tokens"] == 4096
    assert not {"temperature", "top_p", "stop", "tool_choice", "parallel_tool_calls",
                "reasoning_effort"} & set(body)


def test_a_keyword_tool_choice_is_sent_as_is_and_never_without_tools(server):
    settings = resolve("openai:x", make_agent(config={"model_settings": {
        "tool_choice": "required"}}).config.model_settings)
    server.reply(200, wire_json("openai_completion_text.json"))
    server.reply(200, wire_json("openai_completion_text.json"))
    provider = openai_at(server)

    provider.complete(Request(model="x", messages=(Message.user("hi"),), tools=(ECHO,),
                              **settings.request_fields()))
    provider.complete(Request(model="x", messages=(Message.user("hi"),),
                              **settings.request_fields()))

    with_tools, without = (r.body for r in server.requests)
    assert with_tools["tool_choice"] == "required"
    assert "tool_choice" not in without  # refused by servers without tools


def test_anthropic_gets_its_own_words_and_no_sampling(server):
    server.reply(200, wire_json("anthropic_message_text.json"))
    settings = resolve("anthropic:claude-sonnet-4-6", make_agent(config={"model_settings": {
        "max_output_tokens": 2000, "stop": ["END"], "tool_choice": "required",
        "parallel_tool_calls": False, "reasoning_effort": "max"}}).config.model_settings)

    anthropic_at(server).complete(Request(
        model="claude-sonnet-4-6", messages=(Message.user("hi"),), tools=(ECHO,),
        **settings.request_fields()))

    body = server.requests[0].body
    assert body["max_tokens"] == 2000
    assert body["stop_sequences"] == ["END"]
    assert body["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    assert body["output_config"] == {"effort": "max"}
    assert not {"temperature", "top_p"} & set(body)


def test_anthropic_names_the_tool_and_a_lone_parallel_flag_rides_on_auto(server):
    server.reply(200, wire_json("anthropic_message_text.json"))
    server.reply(200, wire_json("anthropic_message_text.json"))
    provider = anthropic_at(server)
    base = Request(model="claude-sonnet-4-6", messages=(Message.user("hi"),), tools=(ECHO,))
    for options in ({"tool_choice": {"name": "echo"}}, {"parallel_tool_calls": False}):
        settings = resolve("anthropic:claude-sonnet-4-6",
                           make_agent(config={"model_settings": options}).config.model_settings)
        provider.complete(replace(base, **settings.request_fields()))

    named, lone = (r.body["tool_choice"] for r in server.requests)
    assert named == {"type": "tool", "name": "echo"}
    assert lone == {"type": "auto", "disable_parallel_tool_use": True}
