"""The manifest of landed migrations: each migration file's SHA-256, so a landed one stays as it
landed.

A database that applied a migration keeps its schema whatever the file says later: an edited or
deleted migration leaves that database and the code disagreeing, and nothing tells its operator.
Each migration's hash is recorded once, in a file that is never written again:
``migrations/manifest.sha256`` holds those of the migrations that landed before 2026-12-08, and
each later one has its own ``<name>.py.sha256`` beside it (both in the format of ``sha256sum``:
``sha256sum -c`` checks them without Python). So adding a migration adds files and edits none
that landed. ``tests/test_project.py`` fails when a recorded migration changed or is gone, and
when a migration has no hash yet.

``python tools/migration_manifest.py`` checks the hashes and prints what is wrong;
``python tools/migration_manifest.py --append`` records each new migration's hash beside it. It
never rewrites one: a changed migration is fixed by restoring the file and putting the change in
a new migration, not by updating its hash.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIGRATIONS = ROOT / "migrations"
MANIFEST_NAME = "manifest.sha256"  # the hashes of the first 43 migrations, frozen
SIDECAR = ".sha256"  # a later migration's own hash: <app>/<name>.py.sha256
APPEND = "python tools/migration_manifest.py --append"


@dataclass(frozen=True)
class Problems:
    """What differs between the manifest and the migration files, by path under ``migrations/``."""

    changed: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    unlisted: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.changed or self.missing or self.unlisted)

    def report(self) -> str:
        """What is wrong and what to do about each kind, for a person."""
        lines = []
        if self.changed:
            lines.append("Landed migrations changed (restore them from git and put the change "
                         "in a new migration):")
            lines += [f"  {path}" for path in self.changed]
        if self.missing:
            lines.append("Landed migrations deleted (restore them from git; a database may "
                         "have applied them):")
            lines += [f"  {path}" for path in self.missing]
        if self.unlisted:
            lines.append(f"New migrations with no recorded hash (run: {APPEND}):")
            lines += [f"  {path}" for path in self.unlisted]
        return "\n".join(lines)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def migration_files(root: Path = MIGRATIONS) -> list[str]:
    """Every migration module under ``root``, as ``<app>/<name>.py``, sorted by app then name."""
    return sorted(str(path.relative_to(root)) for path in root.glob("*/*.py")
                  if path.name != "__init__.py")


def _hash_lines(path: Path, prefix: str = "") -> list[tuple[str, str, str]]:
    """``(sha, <app>/<name>.py, where)`` for each line of a ``sha256sum`` file; ``prefix`` is
    the app of a file listing names within its folder."""
    found = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        sha, sep, name = line.partition("  ")
        where = f"{path.name}:{number}"
        if not sep or len(sha) != 64 or not name:
            raise ValueError(f"{where}: not '<sha256>  <name>.py': {line!r}")
        found.append((sha, prefix + name, where))
    return found


def read_manifest(root: Path = MIGRATIONS) -> dict[str, str]:
    """Every recorded hash by path: the frozen manifest's in its order, then each sidecar's."""
    manifest = root / MANIFEST_NAME
    lines = _hash_lines(manifest) if manifest.exists() else []
    for sidecar in sorted(root.glob(f"*/*.py{SIDECAR}")):
        lines += _hash_lines(sidecar, f"{sidecar.parent.name}/")
    listed: dict[str, str] = {}
    for sha, path, where in lines:
        if path in listed:
            raise ValueError(f"{where}: {path} is recorded twice")
        listed[path] = sha
    return listed


def check(root: Path = MIGRATIONS) -> Problems:
    listed = read_manifest(root)
    present = migration_files(root)
    return Problems(
        changed=tuple(p for p, sha in listed.items() if (root / p).exists()
                      and digest(root / p) != sha),
        missing=tuple(p for p in listed if not (root / p).exists()),
        unlisted=tuple(p for p in present if p not in listed))


def append(root: Path = MIGRATIONS) -> list[str]:
    """Record each migration that has no hash yet in a file of its own beside it
    (``<name>.py.sha256``): the paths recorded. No file already written is touched.

    Refuses while a recorded migration changed or is gone, so recording never papers over one.
    """
    problems = check(root)
    if problems.changed or problems.missing:
        raise SystemExit(Problems(problems.changed, problems.missing).report())
    for path in problems.unlisted:
        migration = root / path
        migration.with_name(migration.name + SIDECAR).write_text(
            f"{digest(migration)}  {migration.name}\n")
    return list(problems.unlisted)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--append", action="store_true",
                        help="record the hash of each migration that has none yet")
    args = parser.parse_args(argv)
    if args.append:
        added = append()
        for path in added:
            print(f"recorded {path}")
        if not added:
            print("every migration is recorded already")
        return 0
    problems = check()
    if problems:
        print(problems.report(), file=sys.stderr)
        return 1
    print(f"{len(read_manifest())} migrations, each as it landed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
