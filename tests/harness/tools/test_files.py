"""The file tools (harness/tools/files.py): paths, each tool's answers and errors, limits."""

from __future__ import annotations

import pytest

from harness.tools.files import (
    GREP_MAX_MATCHES,
    LINE_CHUNK,
    FileError,
    glob_regex,
    normalize_path,
)
from tests.support.files import call, middleware, unnumbered

# -- paths ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "expected"), [
    ("/a.md", "/a.md"), ("/notes/./plan.md", "/notes/plan.md"), ("//notes//a", "/notes/a"),
    ("/notes/", "/notes"), ("/ü/日本.txt", "/ü/日本.txt"),
])
def test_paths_are_normalised(raw, expected):
    assert normalize_path(raw) == expected


@pytest.mark.parametrize(("raw", "message"), [
    ("notes.md", "absolute"), ("/a/../etc", "'..'"), ("/../a", "'..'"), ("/a\x00b", "control"),
    ("/a\nb", "control"), ("/" + "a" * 600, "limited"), ("/", "directory"),
])
def test_bad_paths_are_refused(raw, message):
    with pytest.raises(FileError, match=message):
        normalize_path(raw)


def test_a_directory_path_may_be_the_root():
    assert normalize_path("/", directory=True) == "/"


def test_a_bad_path_is_an_error_result_the_model_reads():
    result = call(middleware(), "write_file", path="../x", content="hi")
    assert result.is_error and "absolute" in result.content
    result = call(middleware(), "read_file", path="/a/../../etc/passwd")
    assert result.is_error and "'..'" in result.content


# -- write, read, edit -----------------------------------------------------------------------


def test_write_creates_then_overwrites():
    mw = middleware()
    assert call(mw, "write_file", path="/notes/a.md", content="one\ntwo\n").content == \
        "Created /notes/a.md (8 bytes)."
    assert call(mw, "write_file", path="/notes//a.md", content="thrée").content == \
        "Overwrote /notes/a.md (6 bytes)."
    assert mw.files.store.files == {"/notes/a.md": "thrée"}


def test_read_numbers_lines_like_cat_n():
    mw = middleware({"/a.txt": "alpha\nbeta\n\ngamma\n"})
    assert call(mw, "read_file", path="/a.txt").content == (
        "     1\talpha\n     2\tbeta\n     3\t\n     4\tgamma")


def test_read_with_offset_and_limit_says_where_to_continue():
    mw = middleware({"/n.txt": "\n".join(f"line {i}" for i in range(1, 11))})
    out = call(mw, "read_file", path="/n.txt", offset=3, limit=2).content
    assert out.split("\n") == ["     4\tline 4", "     5\tline 5",
                               "[Showing lines 4-5 of 10. Continue with offset=5.]"]
    assert call(mw, "read_file", path="/n.txt", offset=8).content.split("\n") == [
        "     9\tline 9", "    10\tline 10"]


def test_read_errors_missing_file_offset_past_end_and_empty_file():
    mw = middleware({"/a.txt": "x\ny", "/dir/b.txt": "b", "/empty": ""})
    missing = call(mw, "read_file", path="/nope.txt")
    assert missing.is_error and missing.content == "File not found: /nope.txt."
    assert "it is a directory" in call(mw, "read_file", path="/dir").content
    past = call(mw, "read_file", path="/a.txt", offset=2)
    assert past.is_error and "past the end of /a.txt, which has 2 lines" in past.content
    assert call(mw, "read_file", path="/empty").content == "/empty is empty."
    bad = call(mw, "read_file", path="/a.txt", limit=0)
    assert bad.is_error and "limit" in bad.content


def test_long_lines_are_shown_in_numbered_pieces_and_nothing_is_lost():
    long_line = "".join(chr(97 + i % 26) for i in range(LINE_CHUNK * 2 + 10))
    mw = middleware({"/long": f"short\n{long_line}\nend"})
    out = call(mw, "read_file", path="/long").content
    assert [row.split("\t")[0].strip() for row in out.split("\n")] == ["1", "2", "2.2", "2.3", "3"]
    assert unnumbered(out) == f"short\n{long_line}\nend"


def test_edit_replaces_a_unique_match():
    mw = middleware({"/a.py": "x = 1\ny = 2\n"})
    result = call(mw, "edit_file", path="/a.py", old_string="y = 2", new_string="y = 3")
    assert not result.is_error and result.content == "Edited /a.py: replaced 1 occurrence(s)."
    assert mw.files.store.files["/a.py"] == "x = 1\ny = 3\n"


def test_edit_refuses_an_ambiguous_match_and_changes_nothing():
    mw = middleware({"/a.py": "v = 1\nv = 1\n"})
    result = call(mw, "edit_file", path="/a.py", old_string="v = 1", new_string="v = 2")
    assert result.is_error and "occurs 2 times" in result.content
    assert "replace_all" in result.content
    assert mw.files.store.files["/a.py"] == "v = 1\nv = 1\n" and mw.files.store.writes == []
    result = call(mw, "edit_file", path="/a.py", old_string="v = 1", new_string="v = 2",
                  replace_all=True)
    assert result.content == "Edited /a.py: replaced 2 occurrence(s)."
    assert mw.files.store.files["/a.py"] == "v = 2\nv = 2\n"


def test_edit_errors_not_found_missing_file_and_no_change():
    mw = middleware({"/a.py": "x = 1\n"})
    result = call(mw, "edit_file", path="/a.py", old_string="x = 2", new_string="x = 3")
    assert result.is_error and "was not found in /a.py" in result.content
    result = call(mw, "edit_file", path="/b.py", old_string="x", new_string="y")
    assert result.is_error and result.content == "File not found: /b.py."
    result = call(mw, "edit_file", path="/a.py", old_string="x", new_string="x")
    assert result.is_error and "the same" in result.content
    assert mw.files.store.writes == []


def test_content_limits():
    mw = middleware(max_file_chars=100, max_files=2)
    assert call(mw, "write_file", path="/big", content="x" * 101).is_error
    nul = call(mw, "write_file", path="/nul", content="a\x00b")
    assert nul.is_error and "NUL" in nul.content
    assert not call(mw, "write_file", path="/1", content="a").is_error
    assert not call(mw, "write_file", path="/2", content="b").is_error
    full = call(mw, "write_file", path="/3", content="c")
    assert full.is_error and "2 files, the limit" in full.content
    assert not call(mw, "write_file", path="/1", content="overwrite is fine").is_error
    grown = call(mw, "edit_file", path="/1", old_string="fine", new_string="f" * 100)
    assert grown.is_error and "limited to 100" in grown.content


# -- ls, glob, grep --------------------------------------------------------------------------

TREE = {"/README.md": "# hi\nTODO: intro\n", "/docs/a.md": "alpha\nTODO later\n",
        "/docs/deep/b.md": "beta\n", "/src/main.py": "print('todo')\nx = 1  # TODO\n"}


def test_ls_lists_files_under_a_directory_with_sizes():
    mw = middleware(TREE)
    assert call(mw, "ls").content.split("\n") == [
        "/README.md (17 bytes)", "/docs/a.md (17 bytes)", "/docs/deep/b.md (5 bytes)",
        "/src/main.py (28 bytes)"]
    assert call(mw, "ls", path="/docs").content.split("\n") == [
        "/docs/a.md (17 bytes)", "/docs/deep/b.md (5 bytes)"]
    assert call(mw, "ls", path="/do").content == "No files under /do."


@pytest.mark.parametrize(("pattern", "path", "expected"), [
    ("**/*.md", "/", ["/README.md", "/docs/a.md", "/docs/deep/b.md"]),
    ("*.md", "/", ["/README.md"]),
    ("*.md", "/docs", ["/docs/a.md"]),
    ("/docs/**", "/src", ["/docs/a.md", "/docs/deep/b.md"]),
    ("src/[lm]ain.p?", "/", ["/src/main.py"]),
    ("**/*.rs", "/", []),
])
def test_glob(pattern, path, expected):
    out = call(middleware(TREE), "glob", pattern=pattern, path=path).content
    assert (out.split("\n") if expected else out.startswith("No files match")) == (
        expected or True)


def test_glob_segments():
    assert glob_regex("*.md").fullmatch("a.md") and not glob_regex("*.md").fullmatch("d/a.md")
    assert glob_regex("**/x").fullmatch("x") and glob_regex("**/x").fullmatch("a/b/x")
    assert glob_regex("[!a]b").fullmatch("cb") and not glob_regex("[!a]b").fullmatch("ab")


def test_glob_spans_directories_only_with_a_whole_segment_globstar():
    assert glob_regex("src/**/*.py").fullmatch("src/a/b.py")
    assert glob_regex("src/**/*.py").fullmatch("src/b.py")
    assert glob_regex("**.md").fullmatch("a.md") and not glob_regex("**.md").fullmatch("x/a.md")
    assert glob_regex(r"a\*b").fullmatch("a*b") and not glob_regex(r"a\*b").fullmatch("axb")
    assert not glob_regex("[b-a]").fullmatch("a") and not glob_regex("[b-a]").fullmatch("b")


def test_glob_hides_no_file_and_keeps_case_and_segments():
    # A session's files are all its own: * and ** match names starting with a dot.
    assert glob_regex("*").fullmatch(".env") and glob_regex("**/*.md").fullmatch(".notes/a.md")
    assert not glob_regex("*.md").fullmatch("A.MD")
    # A class, like * and ?, matches within one segment: never the '/' between two.
    assert not glob_regex("a[!b]c").fullmatch("a/c") and glob_regex("a[!b]c").fullmatch("axc")


def test_grep_regex_literal_path_and_glob_filters():
    mw = middleware(TREE)
    assert call(mw, "grep", pattern=r"TODO\b").content.split("\n") == [
        "/README.md:2: TODO: intro", "/docs/a.md:2: TODO later", "/src/main.py:2: x = 1  # TODO"]
    assert call(mw, "grep", pattern="print('", literal=True).content == \
        "/src/main.py:1: print('todo')"
    assert call(mw, "grep", pattern="TODO", path="/docs").content == "/docs/a.md:2: TODO later"
    assert call(mw, "grep", pattern="TODO", glob="**/*.py").content == \
        "/src/main.py:2: x = 1  # TODO"
    assert call(mw, "grep", pattern="nothing").content == "No matches for 'nothing' under /."
    bad = call(mw, "grep", pattern="print('")
    assert bad.is_error and "literal" in bad.content


def test_grep_output_is_bounded():
    mw = middleware({"/many": "hit\n" * (GREP_MAX_MATCHES + 50)})
    rows = call(mw, "grep", pattern="hit").content.split("\n")
    assert len(rows) == GREP_MAX_MATCHES + 1
    assert rows[-1] == "[50 more matches not shown; narrow the pattern or the path.]"


def test_grep_gives_up_on_a_catastrophic_pattern(monkeypatch):
    monkeypatch.setattr("harness.tools.files.GREP_SECONDS", 0.2)
    mw = middleware({"/x": "x" * 5000})
    result = call(mw, "grep", pattern="(x+x+)+y")
    assert result.is_error and "took too long" in result.content
