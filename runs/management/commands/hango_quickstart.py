"""Prepare the embedded demo: a tenant with an agent, a fresh key and an admin login.

Safe to run again: the tenant, user and agent are reused and a new key is issued each time (the
old ones are never printed again, so they cannot be recovered anyway). The admin's password is
set, and printed, only when the command makes the demo user the admin: a password the user
saved, or changed since, keeps working.
"""

import json
import secrets
import sys
import time
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from rest_framework.test import APIClient

from accounts.services import tenant_bootstrap
from agents.models import Agent

DEMO_TENANT = "demo"
DEMO_EMAIL = "demo@example.com"
DEMO_MESSAGE = "Please count the words in this short sentence for me."
DEMO_SYSTEM_PROMPT = (
    "You are hango's demo agent. Plan multi-step work with write_todos, keep exactly one item "
    "in progress, and answer briefly."
)

# The models an agent may use with no key and no network, named where a newcomer first looks:
# the benchmarks' workload was found only by reading the code.
OFFLINE_MODELS = [
    "  models: offline, scripted:demo (this agent's), scripted:calls (makes the tool calls your",
    "          message asks for, one line each) and scripted:workload-<T> (T tool-calling turns,",
    "          the benchmarks' run); anthropic:<model> and openai:<model> with their API key",
]


class Command(BaseCommand):
    help = "Bootstrap the demo tenant and agent and print how to call the API."

    def add_arguments(self, parser):
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="Where hango serves.")

    def handle(self, *args, url, **options):
        issued = tenant_bootstrap(tenant_name=DEMO_TENANT, email=DEMO_EMAIL, key_name="quickstart")
        member = issued.api_key.member
        agent, _ = Agent.objects.get_or_create(
            tenant=member.tenant,
            owner=member,
            name="demo",
            defaults={
                "description": "Offline demo agent on the scripted model.",
                "system_prompt": DEMO_SYSTEM_PROMPT,
                "model": "scripted:demo",
            },
        )
        password = self.admin_password(member.user_id)

        demo_session = self.demo_conversation(issued.plaintext, str(agent.id))

        key, url = issued.plaintext, url.rstrip("/")
        auth = f'-H "Authorization: Bearer {key}"'
        lines = [
            "",
            "hango quickstart: embedded SQLite database, no broker, offline scripted model.",
            f"  tenant: {DEMO_TENANT} ({member.tenant_id})   agent: {agent.name} ({agent.id})",
            *OFFLINE_MODELS,
            f"  admin:  {url}/admin/  user {DEMO_EMAIL}  password "
            + (password or f"unchanged ({_venv('python')} manage.py changepassword "
                           f"{DEMO_EMAIL} sets another)"),
            f"  docs:   {url}/v1/docs",
            "",
            "Try:",
            f"  curl -s {url}/healthz",
            f"  curl -s {auth} {url}/v1/agents",
            f"  curl -s {auth} -H 'Content-Type: application/json' "
            f"-d '{{\"agent\": \"{agent.id}\", \"title\": \"hello\"}}' {url}/v1/sessions",
            f"  curl -s {auth} {url}/v1/sessions/{demo_session}/messages",
            f"  curl -s {auth} -H 'Content-Type: application/json' "
            f"-d '{{\"content\": \"Count my words again\"}}' "
            f"{url}/v1/sessions/{demo_session}/messages",
            f"  curl -sN {auth} -H 'Accept: text/event-stream' {url}/v1/runs/<run id>/events",
            "",
            "Or talk with the agent in the CLI, in another terminal:",
            f"  export HANGO_API_URL={url} HANGO_API_KEY={key}",
            f"  {_venv('hango')} chat --agent {agent.id}",
            f"  {_venv('hango')} send --session {demo_session} Count my words again --follow",
            "",
            "Demo API key (shown once):",
            key,
        ]
        self.stdout.write("\n".join(lines))

    def admin_password(self, user_id: int) -> str | None:
        """The demo user made the admin, with a new password (returned), unless it is one
        already, with a password: then its password is kept (None)."""
        user = get_user_model().objects.get(pk=user_id)
        if user.is_staff and user.is_superuser and user.password and user.has_usable_password():
            return None
        password = secrets.token_urlsafe(12)
        user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()
        return password

    def demo_conversation(self, key: str, agent_id: str) -> str:
        """One conversation through the real API and run service, printed as a transcript."""
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        session = client.post("/v1/sessions", {"agent": agent_id, "title": "quickstart demo"},
                              format="json").json()
        posted = client.post(f"/v1/sessions/{session['id']}/messages",
                             {"content": DEMO_MESSAGE}, format="json")
        if posted.status_code != 202:
            raise CommandError(f"the demo message was refused: {posted.content.decode()}")
        run_id = posted.json()["run"]["id"]
        deadline = time.monotonic() + 60
        while (run := client.get(f"/v1/runs/{run_id}").json())["status"] in (
                "queued", "running"):
            if time.monotonic() > deadline:
                raise CommandError(f"the demo run did not finish: {run}")
            time.sleep(0.05)
        messages = client.get(f"/v1/sessions/{session['id']}/messages?limit=200").json()
        self.stdout.write(f"\nDemo conversation (session {session['id']}, run {run_id}):")
        for message in messages["results"]:
            for block in message["content"]:
                self.stdout.write("  " + _describe(message["role"], block))
        self.stdout.write(f"Run {run['status']} after {run['turn']} turns. Final todo list:")
        for todo in run["todos"]:
            self.stdout.write(f"  [{'x' if todo['status'] == 'completed' else ' '}] "
                              f"{todo['content']} ({todo['status']})")
        return session["id"]


def _venv(name: str) -> str:
    """The script ``name`` beside this Python (the venv's), as a path from here when it is
    under the current directory."""
    script = Path(sys.executable).with_name(name)
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


def _describe(role: str, block: dict) -> str:
    match block["type"]:
        case "text":
            return f"{role:>9}: {block['text']}"
        case "tool_use":
            args = json.dumps(block["input"], ensure_ascii=False)
            return f"{role:>9}: -> {block['name']}({args[:100]}{'…' if len(args) > 100 else ''})"
        case "tool_result":
            mark = "error" if block["is_error"] else "result"
            return f"{'tool':>9}: <- {mark}: {block['content'][:100]}"
    return f"{role:>9}: [{block['type']}]"
