"""Endpoint signing secrets: made, and kept sealed.

A Standard Webhooks secret (``whsec_`` + base64 of 24 random bytes) signs every delivery, so
hango must be able to read it back: it cannot be kept as a digest the way API keys are. It is
sealed (:mod:`hango_project.sealing`), shown once, when made or rotated, and never logged. A
secret sealed under another ``DJANGO_SECRET_KEY`` fails its deliveries saying so: rotating the
endpoint's secret makes a new one.
"""

from __future__ import annotations

import base64
import secrets

from hango_project import sealing

PREFIX = "whsec_"


class SecretUnreadable(Exception):
    """A stored secret that this server's key does not open (``DJANGO_SECRET_KEY`` changed)."""


def make() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def seal(secret: str) -> str:
    return sealing.seal(secret)


def unseal(sealed: str) -> str:
    try:
        return sealing.unseal(sealed)
    except sealing.Unreadable:
        raise SecretUnreadable("the endpoint's secret was sealed under another "
                               "DJANGO_SECRET_KEY: rotate it") from None
