"""The manifest of landed migrations: each migration file's SHA-256, so a landed one stays as it
landed.

A database that applied a migration keeps its schema whatever the file says later: an edited or
deleted migration leaves that database and the code disagreeing, and nothing tells its operator.
``migrations/manifest.sha256`` lists every migration of every app, one line each in the format of
``sha256sum`` (``cd migrations && sha256sum -c manifest.sha256`` checks it without Python).
``tests/test_project.py`` fails when a listed migration changed or is gone, and when a migration
is not listed yet.

``python tools/migration_manifest.py`` checks the manifest and prints what is wrong;
``python tools/migration_manifest.py --append`` adds a line for each new migration at the end.
It never rewrites a line: a changed migration is fixed by restoring the file and putting the
change in a new migration, not by updating its hash.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIGRATIONS = ROOT / "migrations"
MANIFEST_NAME = "manifest.sha256"
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
            lines.append(f"New migrations not in migrations/{MANIFEST_NAME} (run: {APPEND}):")
            lines += [f"  {path}" for path in self.unlisted]
        return "\n".join(lines)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def migration_files(root: Path = MIGRATIONS) -> list[str]:
    """Every migration module under ``root``, as ``<app>/<name>.py``, sorted by app then name."""
    return sorted(str(path.relative_to(root)) for path in root.glob("*/*.py")
                  if path.name != "__init__.py")


def read_manifest(root: Path = MIGRATIONS) -> dict[str, str]:
    """The manifest's hashes by path, in the manifest's order."""
    manifest = root / MANIFEST_NAME
    if not manifest.exists():
        return {}
    listed: dict[str, str] = {}
    for number, line in enumerate(manifest.read_text().splitlines(), start=1):
        sha, sep, path = line.partition("  ")
        if not sep or len(sha) != 64 or not path:
            raise ValueError(f"{manifest.name}:{number}: not '<sha256>  <app>/<name>.py': {line!r}")
        if path in listed:
            raise ValueError(f"{manifest.name}:{number}: {path} is listed twice")
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
    """Add a line for each migration not listed yet, at the manifest's end: the paths added.

    Refuses while a listed migration changed or is gone, so appending never papers over one.
    """
    problems = check(root)
    if problems.changed or problems.missing:
        raise SystemExit(Problems(problems.changed, problems.missing).report())
    manifest = root / MANIFEST_NAME
    text = manifest.read_text() if manifest.exists() else ""
    if text and not text.endswith("\n"):
        text += "\n"
    lines = [f"{digest(root / path)}  {path}\n" for path in problems.unlisted]
    manifest.write_text(text + "".join(lines))
    return list(problems.unlisted)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--append", action="store_true",
                        help="list the migrations not in the manifest yet, at its end")
    args = parser.parse_args(argv)
    if args.append:
        added = append()
        for path in added:
            print(f"appended {path}")
        if not added:
            print("every migration is listed already")
        return 0
    problems = check()
    if problems:
        print(problems.report(), file=sys.stderr)
        return 1
    print(f"{len(read_manifest())} migrations, each as it landed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
