"""API key material: making a key, and checking a presented one against its stored digest.

A key reads ``hk_<prefix>_<secret>``. The prefix is stored in clear to find the row; the whole key
is stored only as a SHA-512 digest. Keys carry 256 bits of randomness, so a fast digest is enough
(there is nothing to brute-force), and the comparison is constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

KEY_SCHEME = "hk"
PREFIX_BYTES = 6  # 12 hex characters


@dataclass(frozen=True, kw_only=True)
class NewKey:
    prefix: str
    plaintext: str
    digest: str
    trigger_key: str  # what signs the key's broker messages (runs/intake/triggers.py)


def digest(plaintext: str) -> str:
    return hashlib.sha512(plaintext.encode()).hexdigest()


def trigger_key(plaintext: str) -> str:
    """The key a broker message is signed with, derived from the API key (its holder computes
    it): another digest than the stored one, so the database's digests sign nothing."""
    return hashlib.sha512(b"hango-trigger\0" + plaintext.encode()).hexdigest()


def make_key() -> NewKey:
    prefix = secrets.token_hex(PREFIX_BYTES)
    plaintext = f"{KEY_SCHEME}_{prefix}_{secrets.token_urlsafe(32)}"
    return NewKey(prefix=prefix, plaintext=plaintext, digest=digest(plaintext),
                  trigger_key=trigger_key(plaintext))


def parse_prefix(presented: str) -> str | None:
    """The prefix of a well-formed key, or None."""
    scheme, sep, rest = presented.partition("_")
    prefix, sep2, secret = rest.partition("_")
    if scheme != KEY_SCHEME or not sep or not sep2 or not secret:
        return None
    if len(prefix) != PREFIX_BYTES * 2 or any(c not in "0123456789abcdef" for c in prefix):
        return None
    return prefix


def matches(presented: str, stored_digest: str) -> bool:
    return hmac.compare_digest(digest(presented), stored_digest)
