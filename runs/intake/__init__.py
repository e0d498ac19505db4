"""What comes into the runs app: posts, triggers, answers and client results, and the reads
the callers are scoped to.

What it writes it hands to :mod:`runs.execution`; it imports neither the views above it nor
anything that imports it.
"""
