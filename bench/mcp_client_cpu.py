"""The MCP client's own CPU, step by step, as a worker process spends it: ``python
bench/mcp_client_cpu.py URL TOKEN [--sessions N] [--rounds R]`` opens N sessions to the server at
URL one after another in a gevent-patched process (as ``make worker``'s), each listing the tools,
making 3 calls of ``echo`` and closing, through the rule a run's session passes
(``outbound.address_policy`` with private addresses allowed), and prints one JSON line: the mean
CPU ms of each step (every thread of the process: gevent resolves names on threads of its own).

One session at a time, so nothing else shares the process: what a step costs, not what waiting
among 1,000 runs adds. ``bench_mcp.py`` runs it beside its phases.
"""

from gevent import monkey

monkey.patch_all()  # first, as the worker's gevent pool does

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import statistics as st  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hango_project.outbound import address_policy  # noqa: E402
from harness.mcp.client import Target, connect  # noqa: E402

CALLS = 3


def cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def session(target: Target, k: int) -> dict[str, list[float]]:
    spent: dict[str, list[float]] = {"connect": [], "list": [], "call": [], "close": []}
    at = cpu()
    connection = connect(target)
    spent["connect"].append(cpu() - at)
    at = cpu()
    connection.list_tools()
    spent["list"].append(cpu() - at)
    for c in range(CALLS):
        at = cpu()
        connection.call_tool("echo", {"text": f"{k}:{c}"},
                             meta={"io.hango/idempotency-key": f"bench:{k}:{c}"})
        spent["call"].append(cpu() - at)
    at = cpu()
    connection.close()
    spent["close"].append(cpu() - at)
    return spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("url")
    ap.add_argument("token")
    ap.add_argument("--sessions", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    target = Target(transport="streamable_http", url=a.url, timeout_seconds=30,
                    headers={"Authorization": f"Bearer {a.token}"},
                    check_address=address_policy(True, switch="HANGO_MCP_ALLOW_PRIVATE"))
    for k in range(20):  # warm: the SDK's imports, the first connections
        session(target, k)
    spent: dict[str, list[float]] = {"connect": [], "list": [], "call": [], "close": []}
    for k in range(a.sessions * a.rounds):
        for step, values in session(target, k).items():
            spent[step] += values
    print(json.dumps({step: round(st.mean(values) * 1000, 3) for step, values in spent.items()}))


if __name__ == "__main__":
    main()
