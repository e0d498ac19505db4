"""Header templates: which headers a server may send, how credentials are named in them, and
how they are filled in."""

from __future__ import annotations

import pytest

from integrations.templates import (
    carries_credentials,
    header_problems,
    headers_problems,
    references,
    render,
)


@pytest.mark.parametrize(("name", "sensitive"), [
    ("Authorization", True), ("proxy-authorization", True), ("Cookie", True),
    ("X-Api-Key", True), ("X-Auth-User", True), ("X-Access-Token", True),
    ("Client-Secret", True), ("X-Team", False), ("Accept-Language", False),
])
def test_which_headers_carry_credentials_by_their_name(name, sensitive):
    assert carries_credentials(name) is sensitive


def test_references_are_named_in_order_once():
    template = "{{credential:a}} {{credential:b.c}} {{credential:a}}"
    assert references(template) == ["a", "b.c"]
    assert render(template, {"a": "1", "b.c": "2"}) == "1 2 1"
    assert references("plain") == [] and render("plain", {}) == "plain"


def test_a_value_is_put_in_as_it_is_never_read_as_a_template():
    # A credential whose value looks like a reference is not filled in again.
    assert render("Bearer {{credential:t}}", {"t": "{{credential:u}}"}) == (
        "Bearer {{credential:u}}")


@pytest.mark.parametrize(("name", "template"), [
    ("Authorization", "Bearer {{credential:docs-token}}"),
    ("X-Api-Key", "{{credential:key}}"),
    ("X-Team", "support"),
    ("X-Team", "tab\tis fine"),
    ("X-Both", "{{credential:a}}:{{credential:b}}"),
])
def test_headers_that_may_be_kept(name, template):
    assert header_problems(name, template) == []


@pytest.mark.parametrize(("name", "template", "words"), [
    ("Authorization", "Bearer abc", "put it in a credential"),
    ("X-Token", "", "put it in a credential"),
    ("X-Password", "hunter2", "put it in a credential"),
    ("X-Request-Signature", "abc", "put it in a credential"),
    ("X Team", "a", "HTTP token"),
    ("", "a", "HTTP token"),
    ("Content-Type", "text/plain", "hango sets Content-Type itself"),
    ("mcp-session-id", "1", "itself"),
    ("X-A", "a\nb", "control characters"),
    ("X-A", "a\x00", "control characters"),
    ("X-A", "café", "non-ASCII"),
    ("Authorization", "Bearer {{credential:a}} ", "either end"),
    ("X-A", " a", "either end"),
    ("X-A", "{{credential:}}", "a credential's name"),
    ("X-A", "{{credential:UPPER}}", "a credential's name"),
    ("X-A", "{{ credential:a }}", "double braces"),
    ("X-A", "{{credential:a}", "double braces"),
    ("X-A", "a}}", "double braces"),
    ("X-A", "x" * 4097, "At most 4096"),
])
def test_headers_that_are_refused(name, template, words):
    problems = header_problems(name, template)
    assert problems and words in " ".join(problems), problems


def test_a_header_given_twice_and_too_many_headers():
    assert headers_problems({"X-A": "1", "x-a": "2"}) == {
        "X-A": ["Given twice (header names are case-insensitive)."],
        "x-a": ["Given twice (header names are case-insensitive)."]}
    assert headers_problems({f"X-{i}": "v" for i in range(33)}) == {
        "headers": ["At most 32 headers."]}
    assert headers_problems({f"X-{i}": "v" for i in range(32)}) == {}
