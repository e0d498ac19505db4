"""An agent's model settings: the one place that decides what a call asks of the model.

``config.model_settings`` (:class:`ModelSettingsOptions`) sets any of them; the rest come from
the model's row in :mod:`harness.providers.models` or hango's defaults. :func:`resolve` makes
the frozen :class:`ModelSettings` every user reads: the loop's request (and so the adapters
and the quota hold, which holds its input plus ``max_tokens``), the summarization budget (a
fraction of ``context_window``) and the context inspector, so none of them can disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from harness.documents import Document, NeverNull
from harness.messages import ToolChoice
from harness.providers import split_model
from harness.providers.models import known_window, max_output

DEFAULT_MAX_OUTPUT_TOKENS = 4096  # what a call asks for when neither agent nor table says
# The reasoning efforts each provider's wire takes (OpenAI's ``reasoning_effort``,
# Anthropic's ``output_config.effort``); a provider not listed takes none.
EFFORTS: dict[str, frozenset[str]] = {
    "openai": frozenset({"minimal", "low", "medium", "high"}),
    "anthropic": frozenset({"low", "medium", "high", "xhigh", "max"}),
    "scripted": frozenset({"minimal", "low", "medium", "high", "xhigh", "max"}),
}
# Providers whose wire refuses sampling parameters (see harness.providers.anthropic).
NO_SAMPLING = frozenset({"anthropic"})

WindowSource = Literal["agent", "model_table", "server", "default"]
OutputSource = Literal["agent", "default"]
Effort = Literal["minimal", "low", "medium", "high", "xhigh", "max"]
StopText = Annotated[str, StringConstraints(min_length=1, max_length=256)]
ToolName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]


class NamedToolChoice(Document):
    """``{"name": "<tool>"}``: the model must call this tool (one the agent offers)."""

    name: ToolName


class ModelSettingsOptions(Document):
    """``config.model_settings``: what the agent's model calls ask for; each left out takes
    the model's default (the docs' table of model settings) or, for sampling, the server's own."""

    max_output_tokens: Annotated[int | None, NeverNull()] = Field(None, ge=1)
    """The most tokens one answer may take; at most the model's context window."""
    context_window: Annotated[int | None, NeverNull()] = Field(None, ge=1_024, le=10_000_000)
    """The model's context window in tokens, for a model hango does not know (or a server
    that serves a shorter one): the summarization budget is a fraction of it."""
    temperature: Annotated[float | None, NeverNull()] = Field(None, ge=0, le=2)
    top_p: Annotated[float | None, NeverNull()] = Field(None, ge=0, le=1)
    stop: Annotated[tuple[StopText, ...], Field(max_length=4)] = ()
    """Up to 4 texts at which the answer stops."""
    tool_choice: Annotated[Literal["auto", "required", "none"] | NamedToolChoice | None,
                           NeverNull()] = None
    """``auto``, ``required`` (some tool), ``none``, or ``{"name": …}`` (that tool)."""
    parallel_tool_calls: Annotated[bool | None, NeverNull()] = None
    """false: at most one tool call per answer."""
    reasoning_effort: Annotated[Effort | None, NeverNull()] = None
    """How hard a reasoning model thinks: ``minimal``…``high`` for openai: models,
    ``low``…``max`` for anthropic: ones."""


@dataclass(frozen=True, kw_only=True)
class ModelSettings:
    """The effective settings of an agent's calls to its model, and where the guessed ones
    came from."""

    max_output_tokens: int
    max_output_tokens_source: OutputSource
    context_window: int
    context_window_source: WindowSource
    temperature: float | None = None
    top_p: float | None = None
    stop: tuple[str, ...] = ()
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    reasoning_effort: str | None = None

    def request_fields(self) -> dict[str, Any]:
        """The :class:`~harness.messages.Request` fields these settings fill in."""
        return {"max_tokens": self.max_output_tokens, "temperature": self.temperature,
                "top_p": self.top_p, "stop": self.stop, "tool_choice": self.tool_choice,
                "parallel_tool_calls": self.parallel_tool_calls,
                "reasoning_effort": self.reasoning_effort}

    def as_json(self) -> dict[str, Any]:
        """What the inspector shows (null: not sent, the server's default applies)."""
        choice = self.tool_choice
        return {
            "max_output_tokens": self.max_output_tokens,
            "max_output_tokens_source": self.max_output_tokens_source,
            "context_window": self.context_window,
            "context_window_source": self.context_window_source,
            "temperature": self.temperature, "top_p": self.top_p, "stop": list(self.stop),
            "tool_choice": None if choice is None else (
                {"name": choice.name} if choice.mode == "tool" else choice.mode),
            "parallel_tool_calls": self.parallel_tool_calls,
            "reasoning_effort": self.reasoning_effort,
        }


def resolve(model: str, options: ModelSettingsOptions | None = None, *,
            server_window: int | None = None) -> ModelSettings:
    """``model``'s effective settings: the agent's ``options`` over the model's table row
    (``server_window``: the context length its server reports, used before a guessed one)."""
    o = options or ModelSettingsOptions()
    window, listed = known_window(model)
    source: WindowSource = "model_table" if listed else "default"
    if o.context_window is not None:
        window, source = o.context_window, "agent"
    elif server_window is not None and not listed:
        window, source = server_window, "server"
    ceiling = max_output(model)
    out_source: OutputSource = "default"
    if o.max_output_tokens is not None:
        out, out_source = o.max_output_tokens, "agent"
    else:  # hango's default, within what the model and the window allow
        out = min(DEFAULT_MAX_OUTPUT_TOKENS, ceiling or window, max(1, window // 2))
    choice = o.tool_choice
    return ModelSettings(
        max_output_tokens=out, max_output_tokens_source=out_source,
        context_window=window, context_window_source=source,
        temperature=o.temperature, top_p=o.top_p, stop=o.stop,
        tool_choice=None if choice is None else (
            ToolChoice(mode="tool", name=choice.name) if isinstance(choice, NamedToolChoice)
            else ToolChoice(mode=choice)),
        parallel_tool_calls=o.parallel_tool_calls, reasoning_effort=o.reasoning_effort)


def problems(model: str, options: ModelSettingsOptions, *,
             offered: frozenset[str] | None) -> list[str]:
    """Why ``options`` do not fit ``model`` and the tools the agent offers (``offered``; None:
    not known here), as ``model_settings/<field>: …`` lines; empty when they do."""
    found: list[str] = []
    settings = resolve(model, options)
    ceiling = max_output(model)
    limit = min(settings.context_window, ceiling or settings.context_window)
    if options.max_output_tokens is not None and options.max_output_tokens > limit:
        found.append(f"model_settings/max_output_tokens: {options.max_output_tokens:,} is more "
                     f"than {model} gives one answer ({limit:,} tokens"
                     f"{'' if ceiling and ceiling < settings.context_window else ', its window'}).")
    provider = split_model(model)[0]
    efforts = EFFORTS.get(provider, frozenset())
    if options.reasoning_effort is not None and options.reasoning_effort not in efforts:
        found.append(f"model_settings/reasoning_effort: {model} takes "
                     + (f"one of {', '.join(sorted(efforts))}." if efforts
                        else "no reasoning effort."))
    if provider in NO_SAMPLING:
        found.extend(f"model_settings/{name}: {provider}: models take no sampling parameters "
                     "(the API refuses them)." for name in ("temperature", "top_p")
                     if getattr(options, name) is not None)
    choice = options.tool_choice
    if isinstance(choice, NamedToolChoice) and offered is not None \
            and choice.name not in offered:
        found.append(f"model_settings/tool_choice/name: {choice.name!r} is not a tool the "
                     "agent offers.")
    return found
