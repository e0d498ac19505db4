"""``hango credentials``: a secret set from standard input or a hidden prompt (never an
argument), stored sealed, never printed back; the tenant's written by owners and admins, a
member's own by that member."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time

import pytest

from hango_project import sealing
from integrations.models import Credential
from tests.support.cli import ok_json
from tests.support.servers import ROOT

SECRET = "sk-live-0123456789abcdef"


def stored(name: str, *, mine: bool = False) -> str:
    row = Credential.objects.get(name=name, member__isnull=not mine)
    return sealing.unseal(row.value)


def test_a_secret_from_standard_input_is_set_and_never_printed(hango, api):
    made = hango("credentials", "set", "docs-token", input=f"{SECRET}\n")
    assert made.exit_code == 0, made.output
    assert "docs-token" in made.stdout and "tenant" in made.stdout
    assert stored("docs-token") == SECRET  # without the line break

    replaced = ok_json(hango("--json", "credentials", "set", "docs-token", input="sk-new"))
    assert set(replaced) == {"name", "scope", "problem", "created_at", "updated_at"}
    assert stored("docs-token") == "sk-new"
    listed = hango("credentials", "list")
    assert listed.exit_code == 0, listed.stderr
    [row] = [line for line in listed.stdout.splitlines() if "docs-token" in line]
    assert "tenant" in row and "yes" in row
    as_json = ok_json(hango("--json", "credentials", "list"))
    assert [c["name"] for c in as_json["results"]] == ["docs-token"]
    for output in (made.output, listed.output, str(as_json)):
        assert SECRET not in output and "sk-new" not in output

    removed = hango("credentials", "remove", "docs-token")
    assert removed.exit_code == 0
    assert "Removed the tenant's credential docs-token." in removed.stdout
    assert api.get("/v1/credentials").json()["results"] == []
    again = hango("credentials", "remove", "docs-token")
    assert again.exit_code == 1 and "error 404" in again.stderr


def test_a_value_is_never_an_argument_nor_empty(hango, api):
    argv = hango("credentials", "set", "docs-token", SECRET)
    assert argv.exit_code == 2 and "never an argument" in argv.stderr
    assert SECRET not in argv.output
    empty = hango("credentials", "set", "docs-token", input="\n")
    assert empty.exit_code == 2 and "No value on standard input" in empty.stderr
    bad = hango("credentials", "set", "Docs Token", input=SECRET)
    assert bad.exit_code == 1 and "error 422" in bad.stderr and "name:" in bad.stderr
    assert SECRET not in bad.output
    assert api.get("/v1/credentials").json()["results"] == []


def test_a_member_sets_their_own_but_not_the_tenants(hango, api, member_key):
    as_member = {"HANGO_API_KEY": member_key}
    refused = hango("credentials", "set", "docs-token", input=SECRET, env=as_member)
    assert refused.exit_code == 1 and "error 403 permission_denied" in refused.stderr
    assert "Pass --mine" in refused.stderr and SECRET not in refused.output
    assert not Credential.objects.exists()

    own = hango("credentials", "set", "docs-token", "--mine", input=SECRET, env=as_member)
    assert own.exit_code == 0, own.output
    assert stored("docs-token", mine=True) == SECRET
    mine = hango("credentials", "list", env=as_member)
    assert "yours" in mine.stdout and "docs-token" in mine.stdout
    assert hango("credentials", "list").stdout.strip() == "No credentials."  # not the owner's
    assert hango("credentials", "remove", "docs-token", env=as_member).exit_code == 1
    gone = hango("credentials", "remove", "docs-token", "--mine", env=as_member)
    assert gone.exit_code == 0 and "Removed your credential docs-token." in gone.stdout
    assert not Credential.objects.exists()


def _read_until_exit(master: int, proc: subprocess.Popen, answer: bytes) -> bytes:
    """What the command writes to its terminal; ``answer`` typed once it asks."""
    seen, typed, deadline = b"", False, time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the command ended and closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        if not typed and seen.endswith(b"typed-token: "):  # echo is off by now
            os.write(master, answer)
            typed = True
        if proc.poll() is not None and not ready:
            break
    return seen


@pytest.mark.slow
def test_at_a_terminal_the_value_is_asked_for_and_not_echoed(live_server, key):
    master, slave = pty.openpty()
    env = {**os.environ, "HANGO_API_URL": live_server.url, "HANGO_API_KEY": key}
    # A session of its own: its only terminal is this one, whatever runs the tests.
    proc = subprocess.Popen([sys.executable, "-m", "cli", "credentials", "set", "typed-token"],
                            cwd=ROOT, env=env, stdin=slave, stdout=slave, stderr=slave,
                            start_new_session=True)
    os.close(slave)
    try:
        seen = _read_until_exit(master, proc, f"{SECRET}\n".encode())
        assert proc.wait(timeout=30) == 0, seen
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    assert b"typed-token" in seen and SECRET.encode() not in seen
    assert stored("typed-token") == SECRET
