"""Which run tasks a busy worker takes first, so one tenant's backlog cannot hold up another
tenant's new run.

Workers take run tasks from Redis lowest priority number first, in the order sent within a
number (:mod:`runs.execution.tasks`). A run is sent at the normal priority while its tenant has at
most
``HANGO_TENANT_FAIR_SHARE`` runs queued or running, this one included, and behind every normal
one past that: a tenant that queues 5,000 runs has its first ones at the normal priority and
the rest after them, and another tenant's new run goes ahead of those. A tenant's own runs keep
the order they were sent in within each priority. Nothing is starved: a run sent behind waits
only for runs sent at the normal priority, of which no tenant has more than its share.
"""

from __future__ import annotations

import uuid

from django.db import connection

from agents.models import Agent
from hango_project.config import hango
from hango_project.sql import uuid_param
from runs.models import BUSY_RUN_STATUSES, Run

# The run's tenant's busy runs, counted up to a bound, found through the tenant's agents on the
# partial index of busy runs (run_busy_by_agent): a few index probes, however many sessions and
# finished runs the tenant has. (Through its sessions, it was one probe per session the tenant
# ever had: 2.7 ms a send at 1,000 sessions, growing with them.)
_ACTIVE_OF_ITS_TENANT = f"""
SELECT count(*) FROM (
    SELECT 1 FROM {Run._meta.db_table} r
    WHERE r.agent_id IN (SELECT a.id FROM {Agent._meta.db_table} a
                         WHERE a.tenant_id = (SELECT a2.tenant_id FROM {Run._meta.db_table} r2
                                              JOIN {Agent._meta.db_table} a2
                                                ON a2.id = r2.agent_id
                                              WHERE r2.id = %s))
      AND r.status IN ({", ".join(["%s"] * len(BUSY_RUN_STATUSES))})
    LIMIT %s
) AS active
"""


# The same count for a statement that knows the tenant (a post's:
# :mod:`runs.execution.store.pg_start`), on that statement's snapshot: the run it inserts is not
# yet among them.
BUSY_OF_TENANT = f"""
(SELECT count(*) FROM (
    SELECT 1 FROM {Run._meta.db_table} r
    WHERE r.agent_id IN (SELECT a.id FROM {Agent._meta.db_table} a WHERE a.tenant_id = %s)
      AND r.status IN ({", ".join(["%s"] * len(BUSY_RUN_STATUSES))})
    LIMIT %s
) AS busy)
"""


def busy_of_tenant_params(tenant_id: uuid.UUID | str) -> list[object]:
    """:data:`BUSY_OF_TENANT`'s parameters."""
    return [uuid_param(tenant_id), *BUSY_RUN_STATUSES, hango().tenant_fair_share + 1]


def past_share(busy: int) -> bool:
    """Whether a tenant with ``busy`` runs queued or running, a new one included, is past its
    fair share."""
    return busy > hango().tenant_fair_share


def over_fair_share(run_id: uuid.UUID | str) -> bool:
    """Whether the run's tenant has more runs queued or running than its fair share (one
    statement)."""
    with connection.cursor() as cursor:
        cursor.execute(_ACTIVE_OF_ITS_TENANT,
                       [uuid_param(run_id), *BUSY_RUN_STATUSES, hango().tenant_fair_share + 1])
        (active,) = cursor.fetchone()
    return past_share(int(active))
