"""Prepare the embedded demo: a tenant with an agent, a fresh key and an admin login.

Safe to run again: the tenant, user and agent are reused; a new key and admin password are
issued each time (the old ones are never printed again, so they cannot be recovered anyway).
"""

import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from accounts.services import tenant_bootstrap
from agents.models import Agent

DEMO_TENANT = "demo"
DEMO_EMAIL = "demo@example.com"
DEMO_SYSTEM_PROMPT = (
    "You are hango's demo agent. Plan multi-step work with write_todos, keep exactly one item "
    "in progress, and answer briefly."
)


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
        password = secrets.token_urlsafe(12)
        user = get_user_model().objects.get(pk=member.user_id)
        user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()

        key, url = issued.plaintext, url.rstrip("/")
        auth = f'-H "Authorization: Bearer {key}"'
        lines = [
            "",
            "hango quickstart: embedded SQLite database, no broker, offline scripted model.",
            f"  tenant: {DEMO_TENANT}   agent: {agent.name} ({agent.id})",
            f"  admin:  {url}/admin/  user {DEMO_EMAIL}  password {password}",
            f"  docs:   {url}/v1/docs",
            "",
            "Try:",
            f"  curl -s {url}/healthz",
            f"  curl -s {auth} {url}/v1/agents",
            f"  curl -s {auth} -H 'Content-Type: application/json' "
            f"-d '{{\"agent\": \"{agent.id}\", \"title\": \"hello\"}}' {url}/v1/sessions",
            f"  curl -s {auth} {url}/v1/sessions",
            "",
            "Demo API key (shown once):",
            key,
        ]
        self.stdout.write("\n".join(lines))
