"""hango's configuration: one frozen, typed object parsed from the environment at start-up.

``hango_project/settings.py`` builds Django's own settings from it and keeps it as
``settings.HANGO``; code reads it through :func:`hango`, tests replace it with the
``hango_settings`` fixture (:meth:`HangoSettings.replace`). An empty variable counts as unset. A
bad value stops start-up with an error naming the variable.

The variables themselves, grouped by what they configure, are declared in
:mod:`hango_project.variables`.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from pydantic import ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from hango_project.variables import (
    AgentVariables,
    ApiVariables,
    LiveVariables,
    McpVariables,
    ProcessVariables,
    ProviderVariables,
    RunVariables,
    WorkVariables,
)


# Listed last group first: pydantic orders the fields from the last base on, and a derived
# default (``result_backend_url`` from ``broker_url``…) reads only the fields before it.
class HangoSettings(McpVariables, ProviderVariables, LiveVariables, RunVariables, AgentVariables,
                    ApiVariables, WorkVariables, ProcessVariables):
    """Every environment variable the hango server reads (OpenTelemetry's ``OTEL_*`` are the SDK's;
    the CLI, a client of the API, reads its own ``HANGO_API_URL`` and ``HANGO_API_KEY``), each
    declared in its group in :mod:`hango_project.variables`."""

    model_config = SettingsConfigDict(
        frozen=True,
        env_ignore_empty=True,
        case_sensitive=True,
        # An unknown name is a typo: in a test's override it must fail, not pass unnoticed.
        extra="forbid",
    )
    # Django's settings proxy asks every value it hands out for this attribute
    # (``LazyObject.__getattribute__``). Without it the lookup fell through to pydantic's
    # ``__getattr__``, which raises AttributeError: 3 µs of every ``hango()``, a few per turn.
    _mask_wrapped: ClassVar[bool] = True

    @field_validator("debug", "run_inline", "stream_deltas", "mcp_allow_private", mode="before")
    @classmethod
    def _strip_flag(cls, value: object) -> object:
        return value.strip() if isinstance(value, str) else value

    @field_validator("allowed_hosts", "csrf_trusted_origins", mode="before")
    @classmethod
    def _split_commas(cls, value: object, info: ValidationInfo) -> object:
        if not isinstance(value, str):
            return value
        if not value.strip():  # blank counts as unset, as an empty value does
            assert info.field_name is not None
            return cls.model_fields[info.field_name].default
        return [item.strip() for item in value.split(",") if item.strip()]

    @field_validator("mcp_stdio_servers", mode="before")
    @classmethod
    def _json_object(cls, value: object) -> object:
        # Parsed here rather than by pydantic-settings, whose failure names neither the
        # variable nor what is wrong.
        if not isinstance(value, str):
            return value
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON: {exc.msg} at character {exc.pos}") from None

    # Whether validating reads the environment; a copy made by replace() reads only its values.
    reads_environment: ClassVar[bool] = True

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The process environment only: no .env file or secrets directory is read behind the
        # deployment's back.
        return (init_settings, env_settings) if cls.reads_environment else (init_settings,)

    def replace(self, **changes: Any) -> HangoSettings:
        """A copy with ``changes`` (by field name) validated strictly, without reading the
        environment again: an unknown name or a value of the wrong type raises."""
        return _GivenValues(**{**self.model_dump(), **changes})


class _GivenValues(HangoSettings):
    """Validated from the values it is given alone. A ``BaseSettings`` reads its sources on every
    validation (``model_validate`` included), so :meth:`HangoSettings.replace` needs a class
    without the environment among them."""

    # Overrides use field names (the environment, read by the parent class only, uses the
    # variables' names: reading by field name there would let a stray ``debug`` variable count).
    model_config = SettingsConfigDict(strict=True, validate_by_name=True)
    reads_environment = False


def from_environment() -> HangoSettings:
    """Parse the environment; every bad variable is named, its value is not (it may be secret)."""
    try:
        return HangoSettings()
    except ValidationError as error:
        problems = "\n".join(
            f"  {'.'.join(str(part) for part in problem['loc'])}: {problem['msg']}"
            for problem in error.errors(include_url=False, include_input=False)
            # A derived default is not computed once another field failed: no news in that.
            if problem["type"] != "default_factory_not_called"
        )
        raise ImproperlyConfigured(f"Invalid environment variables:\n{problems}") from None


def hango() -> HangoSettings:
    """The settings of this process: ``settings.HANGO``, typed."""
    current: HangoSettings = settings.HANGO
    return current
