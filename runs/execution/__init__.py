"""Executing runs: the task that carries a run, its claim, fence and lease, the slice that
advances it, the commit of each turn, and how it ends and hands over to the next.

Below :mod:`runs.intake`; it publishes through :mod:`runs.live` and imports no room above it.
"""
