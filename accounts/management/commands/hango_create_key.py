from django.core.management.base import BaseCommand, CommandError

from accounts.models import Role, Tenant
from accounts.services import api_key_issue, member_ensure
from hango_project.errors import ApplicationError

from ._keyout import print_issued


class Command(BaseCommand):
    help = (
        "Issue an API key for a member of an existing tenant, creating the user and the member "
        "with --role if needed. The new key is printed alone on the last line."
    )

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True, help="Tenant name (must exist).")
        parser.add_argument("--email", required=True, help="The member's email.")
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument("--key-name", default="", help="A label for the key.")

    def handle(self, *args, tenant, email, role, key_name, **options):
        tenant_obj = Tenant.objects.filter(name=tenant).first()
        if tenant_obj is None:
            raise CommandError(f"No tenant named {tenant!r}; create it with hango_bootstrap.")
        try:
            member, _ = member_ensure(tenant=tenant_obj, email=email, role=role)
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        issued = api_key_issue(member=member, name=key_name)
        print_issued(self, issued, tenant=tenant, email=email)
