"""JSON paths of the changes between two values (agents.version_diff.json_changes)."""

from __future__ import annotations

from agents.version_diff import json_changes


def test_objects_key_by_key_lists_of_objects_item_by_item():
    old = {"subagents": [{"name": "a", "tools": ["ls"]}, {"name": "b"}], "odd key": 1}
    new = {"subagents": [{"name": "a", "tools": ["ls", "grep"]}], "odd key": 2}
    assert json_changes(old, new) == [
        {"path": '$["odd key"]', "change": "changed", "old": 1, "new": 2},
        {"path": "$.subagents[0].tools", "change": "added", "old": None, "new": "grep"},
        {"path": "$.subagents[1]", "change": "removed", "old": {"name": "b"}, "new": None}]


def test_names_in_another_order_are_reordered_and_types_count():
    assert json_changes(["a", "b"], ["b", "a"]) == [
        {"path": "$", "change": "reordered", "old": ["a", "b"], "new": ["b", "a"]}]
    assert json_changes({"x": 1}, {"x": True}) == [
        {"path": "$.x", "change": "changed", "old": 1, "new": True}]
    assert json_changes(None, ["ls"]) == [
        {"path": "$", "change": "changed", "old": None, "new": ["ls"]}]
    assert json_changes({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}) == []
