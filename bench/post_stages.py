"""Where a run's way from its post to its first model call goes, stage by stage, and what the
worker sends PostgreSQL a run: the end-to-end mode of ``bench_post.py`` (and any benchmark whose
workers import :mod:`bench.concurrency_app`, given the files' variables).

The stages: the post sent (the client's clock), its rows written (the run's ``created_at``, the
web's clock as the post's statement went), its answer (the client's: the run's task is
published before the answer leaves), then the worker's stamps (:mod:`bench.stage_hooks`): the
task received by a worker process, started on its greenlet, past the start gate, claimed
(the run's ``started_at`` is the claim's too), its loop built, its first model call. One
machine, one clock. Each stage's delay after the one before, p50 and p99 over the runs, and
from the post.

``python bench/post_stages.py --statements FILE`` prints the statements table of a file a
worker group wrote (``BENCH_STATEMENTS_FILE``), e.g. after ``bench_concurrency.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics as st
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.sampling import pct  # noqa: E402
from bench.stage_hooks import STAGES  # noqa: E402

ORDER = ("sent", "written", "answered", *STAGES)
PHASES = ("start", "build", "loop", "after", "background")


class Stages:
    """The files the workers write their stamps and counts into: made, and named in this
    process's environment (which the benchmark's workers inherit), before they start."""

    def __init__(self) -> None:
        self.files = {}
        for name in ("BENCH_STAGES_FILE", "BENCH_STATEMENTS_FILE"):
            self.files[name] = tempfile.NamedTemporaryFile(prefix="bench-stages-",
                                                           delete=False).name
            os.environ[name] = self.files[name]

    def report(self, posted: list[tuple[int, str, float, float]]) -> str:
        """The stage table of the runs ``posted`` (bench_post's rows: index, run id, sent,
        seconds to the answer) and the statements table, once the workers have stopped."""
        from runs.models import Run

        times: dict[str, dict[str, float]] = {
            run_id: {"sent": sent, "answered": sent + answer}
            for _, run_id, sent, answer in posted}
        for run_id, created in Run.objects.filter(pk__in=list(times)).values_list(
                "id", "created_at"):
            times[str(run_id)]["written"] = created.timestamp()
        for line in Path(self.files["BENCH_STAGES_FILE"]).read_text().splitlines():
            run_id, stage, at = line.split()
            if run_id in times:
                times[run_id].setdefault(stage, float(at))  # a later slice's: not the first
        text = stage_table(list(times.values()))
        text += "\n" + statement_table(self.files["BENCH_STATEMENTS_FILE"])
        for path in self.files.values():
            os.unlink(path)
        return text


def stage_table(runs: list[dict[str, float]]) -> str:
    """Each stage's delay after the one before and since the post, p50 / p99 in ms."""
    lines = [f"{'stage':<11} {'runs':>5} {'after the last p50':>18} {'p99':>8} "
             f"{'since the post p50':>18} {'p99':>8}"]
    for before, stage in zip(ORDER, ORDER[1:], strict=False):
        step = [r[stage] - r[before] for r in runs if stage in r and before in r]
        total = [r[stage] - r["sent"] for r in runs if stage in r]
        if step:
            lines.append(f"{stage:<11} {len(step):>5} {st.median(step) * 1000:>18.1f} "
                         f"{pct(step, 99) * 1000:>8.1f} {st.median(total) * 1000:>18.1f} "
                         f"{pct(total, 99) * 1000:>8.1f}")
    return "\n".join(lines)


def statement_table(path: str, *, top: int = 14) -> str:
    """What the workers sent PostgreSQL a run (the runs their processes started, warm-up
    included), by phase, and the most frequent statements."""
    started = 0
    by_phase: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    by_text: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0])
    for line in Path(path).read_text().splitlines():
        row = json.loads(line)
        if "started" in row:
            started += row["started"]
            continue
        for entry in (by_phase[row["phase"]], by_text[row["phase"], row["sql"]]):
            entry[0] += row["n"]
            entry[1] += row["s"]
    if not started:
        return "no statements counted"
    n, s = sum(v[0] for v in by_phase.values()), sum(v[1] for v in by_phase.values())
    lines = [f"statements a run ({started} tasks started): {n / started:.2f}, "
             f"{s * 1000 / started:.2f} ms of client-side wall; by phase: " + ", ".join(
                 f"{p} {by_phase[p][0] / started:.2f} ({by_phase[p][1] * 1000 / started:.2f} ms)"
                 for p in PHASES if p in by_phase)]
    ranked = sorted(by_text.items(), key=lambda kv: -kv[1][0])[:top]
    for (phase, text), (count, seconds) in ranked:
        lines.append(f"  {count / started:>6.2f} {seconds * 1000 / started:>6.2f} ms  "
                     f"{phase:<10} {text[:110]}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--statements", required=True, help="a BENCH_STATEMENTS_FILE")
    print(statement_table(ap.parse_args().statements, top=30))


if __name__ == "__main__":
    main()
