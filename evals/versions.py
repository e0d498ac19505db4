"""Which configuration of an agent an eval run sends its cases to: the one place an eval run's
``version`` is resolved (agent versions are issue 38's first point, built beside this app)."""

from __future__ import annotations

from agents.models import Agent
from hango_project.errors import Unprocessable


def resolved_version(agent: Agent, number: int | None) -> int | None:
    """The version number an eval run records for ``agent`` (None: its current configuration,
    as its runs use it). A version other than the current one is refused until agents have
    versions to run."""
    if number is None:
        return None
    raise Unprocessable("This server keeps no agent versions yet: leave out `version` to "
                        "evaluate the agent as it is.", detail={"version": [
                            "agent versions are not available"]})
