"""Endpoint signing secrets: made, and kept encrypted.

A Standard Webhooks secret (``whsec_`` + base64 of 24 random bytes) signs every delivery, so
hango must be able to read it back: it cannot be kept as a digest the way API keys are. It is
kept encrypted (Fernet: AES-128-CBC with an HMAC) under a key derived from ``DJANGO_SECRET_KEY``,
so a copy of the database alone signs nothing; it is shown once, when made or rotated, and never
logged. Changing ``DJANGO_SECRET_KEY`` leaves the stored secrets unreadable: deliveries then fail
saying so, and rotating each endpoint's secret makes a new one.
"""

from __future__ import annotations

import base64
import hashlib
import secrets

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

PREFIX = "whsec_"


class SecretUnreadable(Exception):
    """A stored secret that this server's key does not open (``DJANGO_SECRET_KEY`` changed)."""


def make() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def _fernet() -> Fernet:
    derived = hashlib.sha256(b"hango webhook secrets\0" + settings.SECRET_KEY.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(derived))


def seal(secret: str) -> str:
    return _fernet().encrypt(secret.encode()).decode()


def unseal(sealed: str) -> str:
    try:
        return _fernet().decrypt(sealed.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable("the endpoint's secret was sealed under another "
                               "DJANGO_SECRET_KEY: rotate it") from None
