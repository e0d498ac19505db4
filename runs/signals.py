"""What runs tells the apps above it, which it does not import (the evals app listens)."""

from __future__ import annotations

from django.dispatch import Signal

# Sent by the process that advanced a run, after a slice that may have ended it (its end, if
# any, committed): keywords ``run_id`` (str) and ``session_kind``, the kind of the run's
# session (a ``SessionKind`` value) when the worker's claim read it, else None — so a receiver
# about one kind of session skips the others without a query. Sent robustly: a receiver's error
# is logged, never the run's. A crash before it is sent loses it, so a receiver's work must also
# be reachable another way (the evals app advances its cases again when its results are read).
run_may_have_ended = Signal()
