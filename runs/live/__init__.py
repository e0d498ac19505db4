"""What a run shows while it runs: its live text deltas (one channel per run, in this process or
through Redis) and the wait for its end.

The bottom room: it imports no other room.
"""
