"""The migration manifest's tool: a new migration is appended, a changed or deleted one is
reported and never appended over, and no listed line is rewritten."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import migration_manifest as manifest


@pytest.fixture
def root(tmp_path) -> Path:
    """A ``migrations/`` folder of two apps, their migrations listed."""
    for path in ("accounts/0001_initial.py", "accounts/0002_more.py", "runs/0001_initial.py"):
        (tmp_path / path).parent.mkdir(exist_ok=True)
        (tmp_path / path).write_text(f"# {path}\n")
    (tmp_path / "runs" / "__init__.py").write_text("")
    assert manifest.append(tmp_path) == ["accounts/0001_initial.py", "accounts/0002_more.py",
                                         "runs/0001_initial.py"]
    return tmp_path


def test_a_listed_tree_checks_clean(root):
    assert not manifest.check(root)
    lines = (root / manifest.MANIFEST_NAME).read_text().splitlines()
    first = "accounts/0001_initial.py"
    assert lines[0] == f"{manifest.digest(root / first)}  {first}"  # sha256sum's format


def test_a_new_migration_is_unlisted_until_appended_after_the_others(root):
    before = (root / manifest.MANIFEST_NAME).read_text()
    (root / "accounts" / "0003_new.py").write_text("# new\n")
    problems = manifest.check(root)
    assert problems.unlisted == ("accounts/0003_new.py",)
    assert manifest.APPEND in problems.report()
    assert manifest.append(root) == ["accounts/0003_new.py"]
    after = (root / manifest.MANIFEST_NAME).read_text()
    assert after.startswith(before) and after.endswith("  accounts/0003_new.py\n")
    assert not manifest.check(root)
    assert manifest.append(root) == []
    assert (root / manifest.MANIFEST_NAME).read_text() == after


def test_a_changed_migration_fails_and_is_not_appended_over(root):
    (root / "accounts" / "0002_more.py").write_text("# edited after it landed\n")
    (root / "runs" / "0002_new.py").write_text("# new\n")
    before = (root / manifest.MANIFEST_NAME).read_text()
    problems = manifest.check(root)
    assert problems.changed == ("accounts/0002_more.py",)
    assert "new migration" in problems.report()
    with pytest.raises(SystemExit, match="accounts/0002_more.py"):
        manifest.append(root)
    assert (root / manifest.MANIFEST_NAME).read_text() == before


def test_a_deleted_migration_fails(root):
    (root / "runs" / "0001_initial.py").unlink()
    problems = manifest.check(root)
    assert problems.missing == ("runs/0001_initial.py",) and not problems.changed
    assert "deleted" in problems.report()
    with pytest.raises(SystemExit, match="runs/0001_initial.py"):
        manifest.append(root)


def test_a_malformed_line_is_named(root):
    with (root / manifest.MANIFEST_NAME).open("a") as file:
        file.write("not a hash  runs/0001_initial.py\n")
    with pytest.raises(ValueError, match=":4:"):
        manifest.check(root)
