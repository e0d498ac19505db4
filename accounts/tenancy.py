"""The tenancy rule's data: which ORM paths lead from a model to its tenant and its owner.

Kept apart from ``accounts.scoping`` (which applies the rule) so that models — this app's own
included — can declare it without importing the queries.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Tenancy:
    """ORM paths from a model to its tenant and to its owning member; ``owner=None`` marks a
    tenant-wide object every member of the tenant may see (skills)."""

    tenant: str
    owner: str | None
