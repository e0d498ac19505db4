"""MCP calls from greenlets in a gevent-patched process, the worker's mode (``make worker``):
``python -m tests.support.mcp_gevent URL TOKEN CALLS SECONDS`` opens one session, lists the
tools, makes CALLS calls of ``slow(SECONDS)`` at once from as many greenlets while another
greenlet ticks every 50 ms, and prints one JSON line: the tools, the answers, the wall time of
the calls, the ticks (a hub blocked by a call would not tick) and how many ticks saw an asyncio
loop running (Django would refuse the ORM there)."""

from gevent import monkey

monkey.patch_all()  # first, as the worker's gevent pool does

import asyncio  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import gevent  # noqa: E402

from harness.mcp.client import Target, connect  # noqa: E402

TICK_SECONDS = 0.05


def main() -> None:
    url, token, calls, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    connection = connect(Target(transport="streamable_http", url=url,
                                headers={"Authorization": f"Bearer {token}"},
                                timeout_seconds=seconds + 10))
    tools = [t.name for t in connection.list_tools()]
    ticks = loop_seen = 0

    def tick() -> None:
        nonlocal ticks, loop_seen
        while True:
            gevent.sleep(TICK_SECONDS)
            ticks += 1
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                continue
            loop_seen += 1

    ticker = gevent.spawn(tick)
    started = time.monotonic()
    jobs = [gevent.spawn(connection.call_tool, "slow", {"seconds": seconds},
                         meta={"io.hango/idempotency-key": f"gevent:{i}"}) for i in range(calls)]
    gevent.joinall(jobs, raise_error=True)
    elapsed = time.monotonic() - started
    ticker.kill()
    connection.close()
    print(json.dumps({"patched": monkey.is_module_patched("threading"), "tools": tools,
                      "answers": [job.value.content[0].text for job in jobs],
                      "elapsed": elapsed, "ticks": ticks,
                      "loop_seen": loop_seen}))


if __name__ == "__main__":
    main()
