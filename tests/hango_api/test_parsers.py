"""hango_api.parsers: every key and string of a JSON body is checked for what PostgreSQL cannot
store (NUL, a lone surrogate), wherever it sits, and the error names where it is."""

from __future__ import annotations

import json

import pytest

from hango_api.parsers import unstorable_path

BAD = ["\x00", "\ud800", "\udfff"]


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize(
    "build, path",
    [
        (lambda b: {f"a{b}": 1}, "a\\u{:04x}"),  # the first (and only) key: the 500 of F3
        (lambda b: {f"{b}": 1, "z": 2}, "\\u{:04x}"),
        (lambda b: {"ok": 1, f"k{b}": 2}, "k\\u{:04x}"),
        (lambda b: [{"x": 1}, {b: 1}], "1/\\u{:04x}"),
        (lambda b: {"config": {"subagents": [{"name": f"n{b}"}]}}, "config/subagents/0/name"),
        (lambda b: {"k": ["ok", b]}, "k/1"),
        (lambda b: b, "(root)"),
        (lambda b: [b], "0"),
    ],
)
def test_unstorable_keys_and_strings_are_found_anywhere(bad, build, path):
    assert unstorable_path(build(bad)) == path.format(ord(bad))


def test_the_path_shown_is_itself_encodable():
    # The error body carries the path: a raw lone surrogate in it could not be sent as UTF-8.
    path = unstorable_path({"a": {"\ud800x": 1}})
    assert path == "a/\\ud800x"
    path.encode("utf-8")


@pytest.mark.parametrize("clean", [{}, [], {"a": [1, 2.5, None, True, {"b": "é\U0001f600"}]},
                                   "text", 5, None])
def test_storable_documents_pass(clean):
    assert unstorable_path(clean) is None


def test_a_deep_document_does_not_overflow_the_stack():
    depth = 5_000  # past Python's recursion limit: only the walk's own stack grows
    document: object = "\x00"
    for _ in range(depth):
        document = [document]
    assert unstorable_path(document) == "/".join(["0"] * depth)
    assert unstorable_path(json.loads("[" * 900 + "]" * 900)) is None
