"""The API fuzzed against its own schema, for longer than ``make test`` does: hango under gunicorn
on a database of its own, a tenant and key bootstrapped, real objects for the path parameters,
then schemathesis on every operation of the live schema with the server-error and conformance
checks. Prints the operations, the examples run, the failures by check and each failure with a
curl line to reproduce it; exits 1 when anything failed. README.md says how to run it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.databases import ensure_database  # noqa: E402
from tests.support.fuzz import (  # noqa: E402
    ALL_CHECKS,
    CHECKS,
    PHASES,
    SERVER_ENV,
    fuzz,
    fuzz_config,
    seed_objects,
)
from tests.support.servers import GunicornProcess  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/hango_fuzz"


def prepare(url: str) -> str:
    """Create the database if missing, migrate it, bootstrap a tenant; the owner's key."""
    ensure_database(url)
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "hango_project.settings"}

    def manage(*args: str) -> str:
        return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env,
                              check=True, capture_output=True, text=True).stdout

    manage("migrate", "--noinput", "-v", "0")
    return manage("hango_bootstrap", "--tenant", "fuzz", "--email",
                  "fuzz@fuzz.test").strip().splitlines()[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=100,
                        help="most examples per operation and generation mode (default 100)")
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--mode", choices=["positive", "negative", "all"], default="all")
    parser.add_argument("--phases", default="coverage,fuzzing",
                        help=f"comma-separated, of {', '.join(PHASES)} (default coverage,fuzzing)")
    parser.add_argument("--checks", choices=["conformance", "all"], default="all",
                        help="conformance: no 5xx and every answer documented; all (default): "
                             "also what the schema refuses is refused and what it accepts is "
                             "accepted, auth and deletions hold")
    parser.add_argument("--statuses", action="store_true",
                        help="also print how many requests of each operation got each status")
    parser.add_argument("--db", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB))
    args = parser.parse_args()
    phases = tuple(args.phases.split(","))
    if not set(phases) <= set(PHASES):
        parser.error(f"--phases takes {', '.join(PHASES)}")

    key = prepare(args.db)
    with tempfile.TemporaryDirectory() as logs:
        server = GunicornProcess(Path(logs), database_url=args.db, env=SERVER_ENV)
        try:
            ids = seed_objects(server.url, key)
            config = fuzz_config(key=key, ids=ids, max_examples=args.examples, seed=args.seed,
                                 mode=args.mode, phases=phases,
                                 checks=ALL_CHECKS if args.checks == "all" else CHECKS)
            report = fuzz(f"{server.url}/v1/schema", config)
        finally:
            server.stop()
            log = server.log()
    print(report.summary())
    if args.statuses:
        print("\n".join(f"  {label}: {count}" for label, count in sorted(report.statuses.items())))
    if report.real and "Traceback" in log:
        print("\nserver log (last tracebacks):\n" + log[-6000:])
    return 1 if report.real or report.errors else 0


if __name__ == "__main__":
    sys.exit(main())
