"""Secrets hango must read back (a webhook's signing secret, an API key's trigger-signing key),
kept encrypted: Fernet (AES-128-CBC with an HMAC) under a key derived from
``DJANGO_SECRET_KEY``, so a copy of the database alone opens none of them. Changing
``DJANGO_SECRET_KEY`` leaves what was sealed before unreadable (:class:`Unreadable`): each
owner of one makes a new one (a webhook's rotation, a new API key)."""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


class Unreadable(Exception):
    """Sealed under another ``DJANGO_SECRET_KEY``."""


def _fernet() -> Fernet:
    derived = hashlib.sha256(b"hango sealed secrets\0" + settings.SECRET_KEY.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(derived))


def seal(secret: str) -> str:
    return _fernet().encrypt(secret.encode()).decode()


def unseal(sealed: str) -> str:
    try:
        return _fernet().decrypt(sealed.encode()).decode()
    except InvalidToken:
        raise Unreadable("sealed under another DJANGO_SECRET_KEY") from None
