"""`make quickstart` on embedded defaults: SQLite under var/, no broker, nothing configured.

Runs the real make target twice (the second run must reuse what the first made), talks to the
server it starts over HTTP, then interrupts it.
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import signal
import sqlite3
import subprocess
import time
import urllib.parse
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.support.servers import chunked, free_port, raw_request
from tests.support.sse import durable, follow, live_text, text_of

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _get(url: str, key: str | None = None, body: dict | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode() if body else None)
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    if body:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def _run_quickstart(var_dir: Path, port: int) -> tuple[subprocess.Popen, str, list[str]]:
    """Start `make quickstart` and wait until it serves; the caller stops the process."""
    drop = ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(HANGO_VAR_DIR=str(var_dir), PORT=str(port), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "quickstart"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    key = None
    deadline = time.monotonic() + 240
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if lines[-2:-1] == ["Demo API key (shown once):"]:
                key = lines[-1].strip()
            if key and "Serving on" in line:
                break
            assert time.monotonic() < deadline, "\n".join(lines)
        assert key, "\n".join(lines)
        for _ in range(100):
            try:
                if _get(f"http://127.0.0.1:{port}/healthz")[0] == 200:
                    return proc, key, lines
            except OSError:
                time.sleep(0.2)
        raise AssertionError("server did not come up:\n" + "\n".join(lines))
    except BaseException:
        _stop(proc)
        raise


def _stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _follow_a_run(base: str, key: str, session_id: str) -> None:
    """Offline and without Redis, a follower sees the demo model write (in-process deltas)."""
    status, posted = _get(f"{base}/v1/sessions/{session_id}/messages", key,
                          {"content": "Count the words of this message please"})
    assert status == 202, posted
    frames = follow(base, posted["run"]["id"], key)
    assert durable(frames)[-1].data["data"]["status"] == "completed"
    status, listed = _get(f"{base}/v1/sessions/{session_id}/messages", key)
    final = text_of(listed["results"][-1]["content"])
    # The run started before the follower connected: the answer, at least, came word by word.
    assert live_text(frames)[5] == final and final.startswith("You said:")


def _the_printed_cli_line_runs(lines: list[str], base: str, key: str) -> None:
    """The `hango send ... --follow` line the quickstart prints, run as printed."""
    [send] = [line.split() for line in lines if " send --session " in line]
    env = {**os.environ, "HANGO_API_URL": base, "HANGO_API_KEY": key}
    result = subprocess.run(send, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert 'You said: "Count my words again". It has 4 words.' in result.stdout


def _a_schedule_fires(base: str, key: str, agent_id: str, database: Path) -> None:
    """With no worker, the server's own reconciler thread fires a due schedule."""
    status, made = _get(f"{base}/v1/schedules", key, {"name": "nightly", "agent": agent_id,
                                                      "cron": "0 3 * * *", "content": "hi"})
    assert status == 201, made
    due = datetime.now(UTC).replace(tzinfo=None).isoformat(" ")  # Django's SQLite form
    with sqlite3.connect(database) as db:
        db.execute("UPDATE schedules SET next_run_at = ? WHERE id = ?",
                   [due, made["id"].replace("-", "")])
    deadline = time.monotonic() + 20
    while True:
        status, fires = _get(f"{base}/v1/schedules/{made['id']}/fires", key)
        if fires.get("results"):
            break
        assert time.monotonic() < deadline, "the schedule did not fire in the quickstart"
        time.sleep(0.2)
    assert fires["results"][0]["status"] in ("started", "completed")


def _admin_login(base: str, user: str, password: str) -> str:
    """Log in to the admin as a person does (the form, its CSRF token); where it lands."""
    browser = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    with browser.open(f"{base}/admin/login/", timeout=10) as page:
        [token] = re.findall(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.read().decode())
    form = urllib.parse.urlencode({"username": user, "password": password, "next": "/admin/",
                                   "csrfmiddlewaretoken": token}).encode()
    request = urllib.request.Request(f"{base}/admin/login/", data=form,
                                     headers={"Referer": f"{base}/admin/login/"})
    with browser.open(request, timeout=10) as landed:
        return urllib.parse.urlparse(landed.url).path


def _admin_password(lines: list[str]) -> str:
    """The admin password the quickstart printed ("unchanged" when it kept the one it had)."""
    [admin] = [line for line in lines if line.startswith("  admin:  ")]
    return admin.split("  password ", 1)[1].split()[0]


def test_quickstart_serves_on_embedded_defaults_and_runs_twice(tmp_path):
    agent_ids = []
    passwords = []
    for attempt in range(2):
        port = free_port()
        proc, key, lines = _run_quickstart(tmp_path, port)
        try:
            base = f"http://127.0.0.1:{port}"
            assert any("curl" in line for line in lines)
            # pip's warnings and notices stay in its log; make echoes no recipe lines.
            assert not [line for line in lines if "pip" in line.split(" (pip's output")[0]
                        or line.startswith(("WARNING: Location", "env -u"))], lines
            assert f"  export HANGO_API_URL={base} HANGO_API_KEY={key}" in lines
            assert any(" chat --agent " in line for line in lines)
            _the_printed_cli_line_runs(lines, base, key)
            assert "Run completed after 5 turns. Final todo list:" in lines
            assert "  [x] Write the answer (completed)" in lines
            status, health = _get(f"{base}/healthz")
            assert health["broker"] == {"ok": None, "configured": False}
            status, agents = _get(f"{base}/v1/agents", key)
            assert status == 200
            [agent] = agents["results"]
            status, sessions = _get(f"{base}/v1/sessions", key)
            demos = [s for s in sessions["results"] if s["title"] == "quickstart demo"]
            assert len(demos) == attempt + 1  # one demo conversation per start
            assert agent["model"] == "scripted:demo"
            agent_ids.append(agent["id"])
            status, session = _get(f"{base}/v1/sessions", key, {"agent": agent["id"]})
            assert status == 201, session
            if attempt == 0:
                _follow_a_run(base, key, session["id"])
                _a_schedule_fires(base, key, agent["id"], tmp_path / "hango.sqlite3")
            # runserver cannot de-chunk a body: refused clearly, not read as empty (a 422)
            status, refused = raw_request(port, (
                f"POST /v1/sessions HTTP/1.1\nHost: 127.0.0.1:{port}\n"
                f"Authorization: Bearer {key}\nContent-Type: application/json\n"
                "Transfer-Encoding: chunked\nConnection: close"),
                chunked(json.dumps({"agent": agent["id"]}).encode(), 8))
            assert (status, refused["error"]["code"]) == (411, "length_required"), refused
            # The admin's password is made once: the first one printed still logs in.
            passwords.append(_admin_password(lines))
            assert _admin_login(base, "demo@example.com", passwords[0]) == "/admin/"
        finally:
            _stop(proc)
    assert agent_ids[0] == agent_ids[1]
    assert passwords[1] == "unchanged" != passwords[0]
    assert (tmp_path / "hango.sqlite3").exists()
