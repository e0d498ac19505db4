"""hango's settings object: parsing the environment."""

from __future__ import annotations

import pytest
from pydantic import AliasChoices

from hango_project.config import BASE_DIR, HangoSettings


def variables_of(field: str) -> tuple[str, ...]:
    alias = HangoSettings.model_fields[field].validation_alias
    if isinstance(alias, AliasChoices):
        return tuple(str(choice) for choice in alias.choices)
    assert isinstance(alias, str), field
    return (alias,)


FIELD_OF = {name: field for field in HangoSettings.model_fields for name in variables_of(field)}


@pytest.fixture
def environ(monkeypatch):
    """No variable the settings read is set; the test sets its own."""
    for name in FIELD_OF:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


# -- parsing ------------------------------------------------------------------------------------


def test_an_empty_variable_counts_as_unset(environ):
    environ.setenv("HANGO_PAGE_SIZE", "")
    environ.setenv("HANGO_VAR_DIR", "")
    parsed = HangoSettings()
    assert parsed.page_size == 50
    assert parsed.var_dir == BASE_DIR / "var"


def test_the_broker_url_has_two_names_and_feeds_the_rate_limit_default(environ):
    environ.setenv("CELERY_BROKER_URL", "")
    environ.setenv("HANGO_BROKER_URL", "redis://127.0.0.1:6379/3")
    parsed = HangoSettings()
    assert parsed.broker_url == "redis://127.0.0.1:6379/3"
    assert parsed.rate_limit_redis_url == "redis://127.0.0.1:6379/3"
    environ.setenv("CELERY_BROKER_URL", "amqp://127.0.0.1//")
    parsed = HangoSettings()
    assert parsed.broker_url == "amqp://127.0.0.1//"
    assert parsed.rate_limit_redis_url == ""  # not Redis: in-process counting
    environ.setenv("HANGO_RATE_LIMIT_REDIS_URL", "redis://127.0.0.1:6379/4")
    assert HangoSettings().rate_limit_redis_url == "redis://127.0.0.1:6379/4"


def test_paths_and_lists(environ, tmp_path):
    environ.setenv("HANGO_VAR_DIR", str(tmp_path))
    environ.setenv("DJANGO_ALLOWED_HOSTS", " api.example, ,admin.example ")
    environ.setenv("DJANGO_CSRF_TRUSTED_ORIGINS", "   ")
    parsed = HangoSettings()
    assert parsed.static_root == tmp_path / "static"
    assert parsed.allowed_hosts == ["api.example", "admin.example"]
    assert parsed.csrf_trusted_origins == []


@pytest.mark.parametrize("raw,expected", [("1", True), (" yes ", True), ("on", True),
                                          ("0", False), ("false", False), ("off", False)])
def test_flags(environ, raw, expected):
    environ.setenv("HANGO_RUN_INLINE", raw)
    assert HangoSettings().run_inline is expected


def test_names_are_case_sensitive_as_the_environment_is(environ):
    environ.setenv("hango_page_size", "7")
    assert HangoSettings().page_size == 50


def test_secrets_stay_out_of_reprs(environ):
    environ.setenv("ANTHROPIC_API_KEY", "sk-ant-not-for-logs")
    environ.setenv("DATABASE_URL", "postgres://hango:hunter2@db/hango")
    parsed = HangoSettings()
    assert parsed.anthropic_api_key is not None
    assert parsed.anthropic_api_key.get_secret_value() == "sk-ant-not-for-logs"
    for text in (repr(parsed), str(parsed), str(parsed.model_dump())):
        assert "sk-ant-not-for-logs" not in text and "hunter2" not in text


def test_every_field_says_what_it_means():
    for name, field in HangoSettings.model_fields.items():
        assert field.description, name
