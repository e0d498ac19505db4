"""``bench_post.py``'s floor server: hango's settings, with the floor's one URL and no
middleware (:mod:`bench.post_floor`)."""

from hango_project.settings import *  # noqa: F403

ROOT_URLCONF = "bench.post_floor"
MIDDLEWARE: list[str] = []
# The admin is installed but never routed here: its middleware checks do not apply.
SILENCED_SYSTEM_CHECKS = ["admin.E408", "admin.E409", "admin.E410"]
