"""The suite's two tiers, as a pytest plugin (loaded by ``tests/conftest.py``).

- **A test that starts a process is marked ``slow``**, or it fails: ``subprocess.Popen`` (and so
  ``asyncio``'s subprocesses) and ``multiprocessing`` are watched while a test's setup, call and
  teardown run, and a test that started one without the mark errors at teardown, naming what it
  started. ``make check`` leaves ``slow`` tests out, so the mark is what keeps it fast.
- **A test that uses the database is marked ``database``** at collection (it asks for
  pytest-django's ``db``/``transactional_db`` fixture, directly or through another fixture, or
  carries ``django_db``): ``make check`` runs ``-m "not slow and not database"``, which needs
  neither PostgreSQL nor a process of its own (CONTRIBUTING.md, *Two tiers*).
- **``--durations-file=PATH``** writes every test's setup, call and teardown seconds as JSON,
  slowest first, with each file's total: ``make test`` keeps one per pass under ``var/``.
"""

from __future__ import annotations

import json
import multiprocessing.process
import platform
import subprocess
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

DATABASE_FIXTURES = frozenset({"db", "transactional_db", "django_db_reset_sequences",
                               "django_db_serialized_rollback", "live_server"})

_started: list[str] = []
_durations: dict[str, dict[str, Any]] = defaultdict(dict)
_watching = threading.Event()
_popen_execute_child = subprocess.Popen._execute_child  # type: ignore[attr-defined]
_process_start = multiprocessing.process.BaseProcess.start


def _execute_child(self: subprocess.Popen, args: Any, *rest: Any, **kwargs: Any) -> Any:
    if _watching.is_set():
        _started.append(" ".join(map(str, args)) if isinstance(args, list | tuple) else str(args))
    return _popen_execute_child(self, args, *rest, **kwargs)


def _start(self: multiprocessing.process.BaseProcess) -> None:
    if _watching.is_set():
        _started.append(f"multiprocessing {self.name}")
    _process_start(self)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--durations-file", metavar="PATH", default=None,
                     help="write each test's setup/call/teardown seconds to PATH as JSON")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "database: uses the database (set at collection from the test's fixtures); "
        "`make check` leaves it out")
    # The first call of platform.processor() runs `uname -p` (SDKs ask, for a user agent): once
    # per process, here, so that no test is charged with a process it did not start.
    platform.processor()
    subprocess.Popen._execute_child = _execute_child  # type: ignore[attr-defined]
    multiprocessing.process.BaseProcess.start = _start  # type: ignore[method-assign]


def pytest_unconfigure(config: pytest.Config) -> None:
    subprocess.Popen._execute_child = _popen_execute_child  # type: ignore[attr-defined]
    multiprocessing.process.BaseProcess.start = _process_start  # type: ignore[method-assign]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & DATABASE_FIXTURES or item.get_closest_marker("django_db") is not None:
            item.add_marker(pytest.mark.database)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Any:
    _started.clear()
    _watching.set()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Any:
    try:
        result = yield
    finally:
        _watching.clear()
    if _started:  # a property of the report, which pytest-xdist carries to its controller
        item.user_properties.append(("processes", len(_started)))
    if _started and item.get_closest_marker("slow") is None:
        pytest.fail("this test started a process without @pytest.mark.slow (`make check` runs "
                    "tests that start none): " + "; ".join(c[:120] for c in _started),
                    pytrace=False)
    return result


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    entry = _durations[report.nodeid]
    entry[report.when] = round(report.duration, 3)
    entry.update((name, value) for name, value in report.user_properties if name == "processes")
    if report.when == "call" or not report.passed:
        entry["outcome"] = "failed" if report.failed else entry.get("outcome", report.outcome)


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = session.config.getoption("durations_file")
    if not path or hasattr(session.config, "workerinput"):  # an xdist worker: its controller writes
        return
    tests = [{"test": nodeid, **times,
              "total": round(sum(times.get(w, 0) for w in ("setup", "call", "teardown")), 3)}
             for nodeid, times in _durations.items()]
    tests.sort(key=lambda t: -t["total"])
    files: dict[str, float] = defaultdict(float)
    for test in tests:
        files[test["test"].split("::", 1)[0]] += test["total"]
    report = {"total": round(sum(t["total"] for t in tests), 1),
              "files": {f: round(s, 1) for f, s in sorted(files.items(), key=lambda f: -f[1])},
              "tests": tests}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(report, indent=1) + "\n")
