"""The migration hashes' tool: a new migration's hash is recorded in a file of its own, a changed
or deleted one is reported and never recorded over, and no file already written is touched."""

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


def _sidecar(root: Path, path: str) -> Path:
    return root / (path + manifest.SIDECAR)


def test_a_listed_tree_checks_clean(root):
    assert not manifest.check(root)
    first = "accounts/0001_initial.py"
    line = _sidecar(root, first).read_text()
    assert line == f"{manifest.digest(root / first)}  0001_initial.py\n"  # sha256sum's format


def test_the_frozen_manifest_is_read_and_never_written(root):
    frozen = "accounts/0001_initial.py"
    text = f"{manifest.digest(root / frozen)}  {frozen}\n"
    (root / manifest.MANIFEST_NAME).write_text(text)
    _sidecar(root, frozen).unlink()
    assert not manifest.check(root)
    assert list(manifest.read_manifest(root))[0] == frozen
    (root / "runs" / "0002_new.py").write_text("# new\n")
    assert manifest.append(root) == ["runs/0002_new.py"]
    assert (root / manifest.MANIFEST_NAME).read_text() == text


def test_a_new_migration_is_unlisted_until_recorded_beside_it(root):
    before = {p: p.read_text() for p in root.glob("*/*.sha256")}
    (root / "accounts" / "0003_new.py").write_text("# new\n")
    problems = manifest.check(root)
    assert problems.unlisted == ("accounts/0003_new.py",)
    assert manifest.APPEND in problems.report()
    assert manifest.append(root) == ["accounts/0003_new.py"]
    assert _sidecar(root, "accounts/0003_new.py").read_text().endswith("  0003_new.py\n")
    assert {p: p.read_text() for p in before} == before  # none written before is touched
    assert not manifest.check(root)
    assert manifest.append(root) == []


def test_a_changed_migration_fails_and_is_not_appended_over(root):
    (root / "accounts" / "0002_more.py").write_text("# edited after it landed\n")
    (root / "runs" / "0002_new.py").write_text("# new\n")
    problems = manifest.check(root)
    assert problems.changed == ("accounts/0002_more.py",)
    assert "new migration" in problems.report()
    with pytest.raises(SystemExit, match="accounts/0002_more.py"):
        manifest.append(root)
    assert not _sidecar(root, "runs/0002_new.py").exists()


def test_a_deleted_migration_fails(root):
    (root / "runs" / "0001_initial.py").unlink()
    problems = manifest.check(root)
    assert problems.missing == ("runs/0001_initial.py",) and not problems.changed
    assert "deleted" in problems.report()
    with pytest.raises(SystemExit, match="runs/0001_initial.py"):
        manifest.append(root)


def test_a_malformed_line_is_named(root):
    with _sidecar(root, "runs/0001_initial.py").open("a") as file:
        file.write("not a hash  0001_initial.py\n")
    with pytest.raises(ValueError, match=r"0001_initial\.py\.sha256:2:"):
        manifest.check(root)
