from django.core.management.base import BaseCommand, CommandError

from accounts.services import tenant_bootstrap
from hango_project.errors import ApplicationError

from ._keyout import print_issued


class Command(BaseCommand):
    help = (
        "Create a tenant (or reuse it), a user as its owner, and an API key for them. "
        "The new key is printed alone on the last line."
    )

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True, help="Tenant name.")
        parser.add_argument("--email", required=True, help="The owner's email (their username).")
        parser.add_argument("--key-name", default="bootstrap", help="A label for the key.")

    def handle(self, *args, tenant, email, key_name, **options):
        try:
            issued = tenant_bootstrap(tenant_name=tenant, email=email, key_name=key_name)
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        print_issued(self, issued, tenant=tenant, email=email)
