"""Part ids and the edits of an override set that ``hango context exclude|include`` save."""

from __future__ import annotations

import pytest

from cli.overrides import Override, excluding, including, part_target

EXCLUDED_4 = Override(part="message:4", action="exclude")
EXCLUDED_5 = Override(part="message:5", action="exclude")
REPLACED_3 = Override(part="message:3", action="replace", replacement="shorter")


@pytest.mark.parametrize(("part", "target"), [
    ("system:agent", "agent"), ("system:memory:/memories/AGENTS.md", "agent"),
    ("tool:read_file", "agent"), ("message:1", "session"), ("message:42", "session"),
    ("summary", "session"),
])
def test_each_part_has_one_target(part, target):
    assert part_target(part) == target


@pytest.mark.parametrize("part", ["system:", "tool:", "message:0", "message:07", "message:x",
                                  "message:-1", "message:٣", "Summary", "", "system"])
def test_a_bad_part_id_says_what_one_looks_like(part):
    with pytest.raises(ValueError, match="is not a part id: use system:<name>, tool:<name>"):
        part_target(part)


def test_a_repair_part_cannot_be_overridden():
    with pytest.raises(ValueError, match="made up for one request"):
        part_target("repair:1")


def test_excluding_adds_after_the_others_and_keeps_them():
    edit = excluding([REPLACED_3], ["message:5", "message:5"])
    assert edit.overrides == (REPLACED_3, EXCLUDED_5)
    assert edit.changed and edit.notes == ()


def test_excluding_what_is_excluded_changes_nothing():
    edit = excluding([EXCLUDED_5], ["message:5"])
    assert edit.overrides == (EXCLUDED_5,) and not edit.changed
    assert edit.notes == ("message:5 was already excluded.",)


def test_excluding_a_replaced_part_drops_its_replacement_and_says_so():
    edit = excluding([REPLACED_3, EXCLUDED_5], ["message:3"])
    assert edit.overrides == (Override(part="message:3", action="exclude"), EXCLUDED_5)
    assert edit.changed and "replacement is dropped" in edit.notes[0]


def test_including_removes_the_part_and_its_pair():
    partners = {"message:4": ["message:5"], "message:5": ["message:4"]}
    edit = including([REPLACED_3, EXCLUDED_5, EXCLUDED_4], ["message:5"], partners)
    assert edit.overrides == (REPLACED_3,) and edit.changed
    assert edit.notes == ("message:4 is included too: it is sent with the message it pairs "
                          "with.",)


def test_including_a_replaced_part_removes_its_replace_override():
    edit = including([REPLACED_3, EXCLUDED_5], ["message:3"])
    assert edit.overrides == (EXCLUDED_5,)
    assert "replace override is removed" in edit.notes[0]


def test_including_a_part_without_an_override_changes_nothing():
    edit = including([EXCLUDED_5], ["message:7"], {"message:7": ["message:6"]})
    assert edit.overrides == (EXCLUDED_5,) and not edit.changed
    assert edit.notes == ("message:7 had no override: it is sent as it is.",)


def test_overrides_read_and_write_the_api_shape():
    data = {"part": "system:agent", "action": "replace", "replacement": "Be terse."}
    assert Override.from_json(data).to_json() == data
    assert Override.from_json({"part": "tool:echo", "action": "exclude"}).to_json() == {
        "part": "tool:echo", "action": "exclude", "replacement": None}
