"""MCP calls from greenlets in a gevent-patched process, the worker's mode (``make worker``):
``python -m tests.support.mcp_gevent URL TOKEN CALLS`` opens one session, lists the tools and
makes CALLS calls of ``meet`` at once from as many greenlets, while another greenlet ticks every
50 ms and, after :data:`TICKS` ticks, makes the meeting's last call itself. The server answers
no call of the meeting before all CALLS + 1 are under way (tests/support/mcp_meet.py), so every
answer proves the calls ran at once and the hub went on meanwhile (a hub blocked by a call would
never tick, and the meeting would never be complete). It prints one JSON line: the tools, the
answers, the ticks and how many of them saw an asyncio loop running (Django would refuse the
ORM there)."""

from gevent import monkey

monkey.patch_all()  # first, as the worker's gevent pool does

import asyncio  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402

import gevent  # noqa: E402

from harness.mcp.client import Target, connect  # noqa: E402

TICK_SECONDS = 0.05
TICKS = 10  # ticks while the calls wait, before the ticker makes the meeting's last call


def main() -> None:
    url, token, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
    connection = connect(Target(transport="streamable_http", url=url,
                                headers={"Authorization": f"Bearer {token}"},
                                timeout_seconds=120))
    tools = [t.name for t in connection.list_tools()]
    ticks = loop_seen = 0
    meeting = {"group": "gevent", "parties": calls + 1}

    def tick() -> str:
        nonlocal ticks, loop_seen
        while ticks < TICKS:
            gevent.sleep(TICK_SECONDS)
            ticks += 1
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                continue
            loop_seen += 1
        return str(connection.call_tool("meet", meeting).content[0].text)

    ticker = gevent.spawn(tick)
    jobs = [gevent.spawn(connection.call_tool, "meet", meeting,
                         meta={"io.hango/idempotency-key": f"gevent:{i}"}) for i in range(calls)]
    gevent.joinall([*jobs, ticker], raise_error=True)
    connection.close()
    print(json.dumps({"patched": monkey.is_module_patched("threading"), "tools": tools,
                      "answers": [job.value.content[0].text for job in jobs],
                      "ticker": ticker.value, "ticks": ticks, "loop_seen": loop_seen}))


if __name__ == "__main__":
    main()
