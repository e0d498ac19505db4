"""Writes for tenants, members and API keys."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts import keys
from accounts.audit import audit_record
from accounts.models import ApiKey, AuditAction, Member, Role, Tenant
from hango_project import sealing
from hango_project.errors import Conflict, NotFound, Unprocessable


@dataclass(frozen=True, kw_only=True)
class IssuedKey:
    """A freshly issued key: ``plaintext`` exists only here, once."""

    api_key: ApiKey
    plaintext: str


def member_ensure(*, tenant: Tenant, email: str, role: str) -> tuple[Member, bool]:
    """The member for ``email`` in ``tenant``, created with ``role`` (and its user) if needed.

    An existing member keeps its role; asking for a different one is refused, so issuing a key can
    never silently change what somebody may see.
    """
    if role not in Role.values:
        raise Unprocessable(f"Unknown role {role!r}.", detail={"role": sorted(Role.values)})
    email = email.strip().lower()
    if "@" not in email:
        raise Unprocessable(f"{email!r} is not an email address.")
    user_model = get_user_model()
    with transaction.atomic():
        user, _ = user_model.objects.get_or_create(
            username=email, defaults={"email": email}
        )
        member, created = Member.objects.get_or_create(
            tenant=tenant, user=user, defaults={"role": role}
        )
    if not created and member.role != role:
        raise Conflict(
            f"{email} is already a member of {tenant.name} with role {member.role!r}.",
            detail={"role": member.role},
        )
    return member, created


def _key_detail(api_key: ApiKey) -> dict[str, str]:
    """What the audit log says about a key: its prefix, name and member, never the secret."""
    return {"prefix": api_key.prefix, "name": api_key.name, "member": str(api_key.member_id)}


def api_key_issue(*, member: Member, name: str = "", actor: Member | None = None) -> IssuedKey:
    """A new key for ``member``. ``actor`` is who issued it: None from the command line, the
    staff user's member of the tenant from the Django admin (the audit row's detail names the
    member the key is for)."""
    for _ in range(5):  # a prefix collision is astronomically rare; retry rather than fail
        new = keys.make_key()
        try:
            with transaction.atomic():
                api_key = ApiKey.objects.create(
                    member=member, name=name, prefix=new.prefix, secret_hash=new.digest,
                    trigger_key=sealing.seal(new.trigger_key))
                audit_record(actor=actor, tenant=member.tenant_id,
                             action=AuditAction.API_KEY_CREATE, obj_type="api_key",
                             obj_id=api_key.pk, detail=_key_detail(api_key))
        except IntegrityError:
            continue
        return IssuedKey(api_key=api_key, plaintext=new.plaintext)
    raise RuntimeError("could not allocate a unique API key prefix")


def api_key_revoke(*, api_key: ApiKey, actor: Member | None = None) -> ApiKey:
    """Revoke ``api_key`` (a key already revoked stays as it was, and nothing is recorded)."""
    if api_key.revoked_at is None:
        with transaction.atomic():
            api_key.revoked_at = timezone.now()
            api_key.save(update_fields=["revoked_at"])
            audit_record(actor=actor, tenant=api_key.member.tenant_id,
                         action=AuditAction.API_KEY_REVOKE, obj_type="api_key",
                         obj_id=api_key.pk, detail=_key_detail(api_key))
    return api_key


def tenant_bootstrap(*, tenant_name: str, email: str, key_name: str = "bootstrap") -> IssuedKey:
    """Tenant (reused if it exists), its owner member and a new key for them."""
    tenant_name = tenant_name.strip()
    if not tenant_name:
        raise Unprocessable("The tenant name is empty.")
    with transaction.atomic():
        tenant, _ = Tenant.objects.get_or_create(name=tenant_name)
        member, _ = member_ensure(tenant=tenant, email=email, role=Role.OWNER)
        return api_key_issue(member=member, name=key_name)


def user_make_staff(*, email: str) -> tuple[User, bool]:
    """The existing user ``email`` (their username) made staff and superuser, as
    ``createsuperuser`` makes one, and whether that changed anything. ``createsuperuser`` refuses
    a username that exists, so a tenant's owner made by :func:`tenant_bootstrap` first had no way
    into the admin."""
    username = email.strip().lower()
    found = list(get_user_model().objects.filter(username__iexact=username)[:2])
    if len(found) != 1:  # none, or two whose names differ only in case: name the exact one
        raise NotFound(f"No user {username!r}: hango_bootstrap or hango_create_key makes a "
                       "tenant's member, createsuperuser an admin of no tenant.")
    user = found[0]
    if user.is_staff and user.is_superuser:
        return user, False
    user.is_staff = user.is_superuser = True
    user.save(update_fields=["is_staff", "is_superuser"])
    return user, True
