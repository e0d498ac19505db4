"""The context inspector: what a session's next model call would send, its overrides' routes and
the admin's Context panel. It sits above ``runs`` (it builds a run's loop to inspect it); the
override data it reads and writes is the ``context`` app's, below ``runs``."""
