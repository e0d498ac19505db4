"""``make worker``'s group (hango_project/worker_group.py), really started: a gevent Celery
worker per process asked for, each taking runs from the one queue; a worker killed with -9 is
started again; SIGTERM stops every worker (warm shutdown) and then the group."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.runs import wait_for_run
from tests.support.workers import ROOT, worker_environment

pytestmark = pytest.mark.slow


class Group:
    def __init__(self, broker: str, log_dir: Path, processes: int) -> None:
        self.log_path = log_dir / "group.log"
        self._log = open(self.log_path, "w")  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hango_project.worker_group", "--loglevel", "INFO",
             "--without-mingle", "--without-gossip"], cwd=ROOT,
            env=worker_environment(broker, {"HANGO_WORKER_PROCESSES": str(processes)}),
            stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)

    def log(self) -> str:
        return self.log_path.read_text()

    def wait_for(self, pattern: str, count: int = 1, timeout: float = 60) -> list[str]:
        deadline = time.monotonic() + timeout
        while len(found := re.findall(pattern, self.log())) < count:
            assert time.monotonic() < deadline, f"no {count} × {pattern!r}:\n{self.log()}"
            assert self.proc.poll() is None, f"the group exited:\n{self.log()}"
            time.sleep(0.1)
        return found

    def workers(self) -> dict[str, int]:
        """Each live worker's name (w1, w2…) and pid, from the group's log."""
        started = dict(re.findall(r"worker (w\d+) started \(pid (\d+)\)", self.log()))
        return {name: int(pid) for name, pid in started.items() if _alive(int(pid))}

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        for pid in self.workers().values():  # in groups of their own
            os.kill(pid, signal.SIGKILL)
        self._log.close()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture
def group(broker, tmp_path, transactional_db):
    started: list[Group] = []

    def _start(processes: int) -> Group:
        g = Group(broker, tmp_path, processes)
        started.append(g)
        g.wait_for(r"w\d+@\S+ ready\.", count=processes)
        return g

    yield _start
    for g in started:
        g.close()


def post_run(caller, agent: dict) -> str:
    session = caller.client.post("/v1/sessions", {"agent": agent["id"]}, format="json").json()
    response = caller.client.post(f"/v1/sessions/{session['id']}/messages",
                                  {"content": "count these four words"}, format="json")
    assert response.status_code == 202, response.content
    return response.json()["run"]["id"]


def test_the_group_runs_a_worker_per_process_restarts_one_killed_and_stops(alice, make_agent,
                                                                           group):
    g = group(2)
    workers = g.workers()
    assert sorted(workers) == ["w1", "w2"]
    agent = make_agent(alice, model="scripted:demo")
    runs = [post_run(alice, agent) for _ in range(6)]
    assert all(wait_for_run(r).status == "completed" for r in runs)

    os.kill(workers["w1"], signal.SIGKILL)
    g.wait_for(r"worker w1 exited \(status -9\); starting it again")
    g.wait_for(r"w1@\S+ ready\.", count=2)
    assert g.workers()["w1"] != workers["w1"] and g.workers()["w2"] == workers["w2"]
    assert wait_for_run(post_run(alice, agent)).status == "completed"

    restarted = g.workers()
    os.kill(g.proc.pid, signal.SIGTERM)  # the front alone: it asks each worker once
    assert g.proc.wait(timeout=30) == 0, g.log()
    assert g.log().count("Warm shutdown") == 2
    assert not any(_alive(pid) for pid in restarted.values())


def test_workers_do_not_outlive_a_killed_group(group):
    g = group(2)
    workers = g.workers()
    os.kill(g.proc.pid, signal.SIGKILL)
    g.proc.wait()
    deadline = time.monotonic() + 30  # each worker is sent SIGTERM: its warm shutdown
    while any(_alive(pid) for pid in workers.values()):
        assert time.monotonic() < deadline, g.log()
        time.sleep(0.1)
