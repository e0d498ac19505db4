"""Shared output for the key-issuing commands: the new key alone on the last line."""

from django.core.management.base import BaseCommand

from accounts.services import IssuedKey


def print_issued(command: BaseCommand, issued: IssuedKey, *, tenant: str, email: str) -> None:
    """The key on stdout; on stderr, what it is and the tenant's id, which a broker trigger's
    message names (stdout stays the key alone, for ``KEY=$(…)``)."""
    member = issued.api_key.member
    command.stderr.write(
        f"Issued API key {issued.api_key.prefix}… for {email} ({member.role}) in tenant {tenant}. "
        "It is shown once; store it now."
    )
    command.stderr.write(f"Tenant id: {member.tenant_id} (a broker trigger's message names it "
                         "as `tenant`; `hango whoami` shows it again).")
    command.stdout.write(issued.plaintext)
