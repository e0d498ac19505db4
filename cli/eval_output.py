"""How ``hango eval`` prints and files an eval run: its results table, its gate (pass rate and
regressions), JUnit XML and JSON for CI systems."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import click
from hango_client import EvalRun

from cli.output import Column, cell_text, clip, print_table

RESULT_COLUMNS: list[Column] = [
    ("case", lambda r: r["case_name"]),
    ("status", lambda r: r["status"]),
    ("why", lambda r: clip("; ".join(v["reason"] for v in r["verdicts"] if not v["passed"]),
                           80)),
    ("tokens", lambda r: f"{r['input_tokens']}+{r['output_tokens']}"),
    ("cost", lambda r: _cost(r.get("cost") or {})),
    ("ms", lambda r: cell_text(r.get("latency_ms"))),
    ("run", lambda r: cell_text(r.get("run"))),
]
SUITE_COLUMNS: list[Column] = [
    ("id", lambda r: r["id"]), ("name", lambda r: r["name"]),
    ("cases", lambda r: str(r["case_count"])),
]
CASE_COLUMNS: list[Column] = [
    ("id", lambda r: r["id"]), ("name", lambda r: r["name"]),
    ("turns", lambda r: str(len(r["turns"]))),
    ("graders", lambda r: ", ".join(g["type"] for g in r["graders"])),
]
RUN_COLUMNS: list[Column] = [
    ("id", lambda r: r["id"]), ("status", lambda r: r["status"]),
    ("passed", lambda r: f"{r['summary']['passed']}/{r['summary']['cases']}"),
    ("agent", lambda r: r["agent"]), ("version", lambda r: cell_text(r.get("version"))),
]


def _cost(cost: dict[str, Any]) -> str:
    lines = cost.get("by_currency") or []
    return " + ".join(f"{line['total']} {line['currency']}" for line in lines) or "-"


def summary_line(eval_run: EvalRun) -> str:
    s = eval_run["summary"]
    rate = "-" if s["pass_rate"] is None else f"{s['pass_rate']:.0%}"
    cost = " + ".join(f"{v} {c}" for c, v in s["cost"].items()) or "no priced calls"
    return (f"eval run {eval_run['id']} {eval_run['status']}: {s['passed']}/{s['cases']} "
            f"passed ({rate}), {s['failed']} failed, {s['error']} errors · "
            f"{s['input_tokens']}+{s['output_tokens']} tokens · {cost} · "
            f"{s['latency_ms']['total']} ms")


def print_eval_run(eval_run: EvalRun) -> None:
    if results := eval_run.get("results"):
        print_table([dict(result) for result in results], RESULT_COLUMNS)
    click.echo(summary_line(eval_run))


def print_comparison(compared: dict[str, Any]) -> None:
    for label in ("regressed", "fixed"):
        cases = compared[label]
        click.echo(f"{label}: " + (", ".join(c["name"] for c in cases) if cases else "none"))
    rate = compared["pass_rate"]
    click.echo(f"pass rate: {cell_text(rate['base'])} -> {cell_text(rate['head'])}")
    click.echo(f"tokens: {compared['tokens']['delta']:+d} · latency: "
               f"{compared['latency_ms']['delta']:+d} ms · cost: " + (", ".join(
                   f"{d['delta']} {c}" for c, d in compared["cost"].items()) or "-"))


def gate_problems(eval_run: EvalRun, min_pass: float | None,
                  compared: dict[str, Any] | None) -> list[str]:
    """Why the eval run fails the CI gate: below the pass rate, or a case regressed."""
    problems = []
    if eval_run["status"] != "completed":
        problems.append(f"the eval run is {eval_run['status']}")
    rate = eval_run["summary"]["pass_rate"] or 0.0
    if min_pass is not None and rate < min_pass:
        problems.append(f"pass rate {rate:.2%} is below {min_pass:.2%}")
    if compared and compared["regressed"]:
        problems.append("regressed against the baseline: "
                        + ", ".join(c["name"] for c in compared["regressed"]))
    return problems


def write_json(path: Path, eval_run: EvalRun, compared: dict[str, Any] | None) -> None:
    document = {"eval_run": eval_run, "comparison": compared}
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def write_junit(path: Path, eval_run: EvalRun, suite_name: str) -> None:
    """One ``testcase`` per case: a failure names the graders that failed, an error a case
    that could not run, a cancelled case is skipped."""
    results = eval_run.get("results") or []
    counts = eval_run["summary"]
    suite = ElementTree.Element("testsuite", {
        "name": suite_name, "tests": str(len(results)), "failures": str(counts["failed"]),
        "errors": str(counts["error"]), "skipped": str(counts["cancelled"] + counts["running"]),
        "time": f"{counts['latency_ms']['total'] / 1000:.3f}"})
    for result in results:
        case = ElementTree.SubElement(suite, "testcase", {
            "classname": suite_name, "name": result["case_name"],
            "time": f"{(result.get('latency_ms') or 0) / 1000:.3f}"})
        failed = [f"{v['grader']}: {v['reason']}" for v in result["verdicts"] if not v["passed"]]
        tag = {"failed": "failure", "error": "error", "cancelled": "skipped",
               "running": "skipped"}.get(result["status"])
        if tag is not None:
            element = ElementTree.SubElement(case, tag, {"message": clip("; ".join(failed)
                                                                         or result["status"])})
            element.text = "\n".join(failed)
        if result.get("run"):
            ElementTree.SubElement(case, "system-out").text = f"run {result['run']}"
    root = ElementTree.Element("testsuites")
    root.append(suite)
    ElementTree.indent(root)
    path.write_bytes(ElementTree.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n")
