# ruff: noqa: E501  (sample content: its lines are the data)
"""Sample tool definitions and tool_use / tool_result blocks for bench_estimator.py and
bench_tokens.py, alongside the texts of estimator_samples.py: realistic schemas and calls,
written for these benchmarks."""

from __future__ import annotations

from typing import Any

from harness.messages import ToolDef, ToolResultBlock, ToolUseBlock

TOOL_SCHEMAS = [
    ToolDef(
        name="search_flights",
        description="Search one-way or return flights between two airports. Prices are per "
        "adult in the requested currency and include taxes. Use IATA airport codes; when the "
        "user gives a city with several airports, ask which one or search each.",
        input_schema={
            "type": "object",
            "properties": {
                "origin": {"type": "string", "pattern": "^[A-Z]{3}$",
                           "description": "IATA code of the departure airport, e.g. HAN."},
                "destination": {"type": "string", "pattern": "^[A-Z]{3}$",
                                "description": "IATA code of the arrival airport."},
                "depart_date": {"type": "string", "format": "date"},
                "return_date": {"type": "string", "format": "date",
                                "description": "Omit for a one-way search."},
                "passengers": {"type": "integer", "minimum": 1, "maximum": 9, "default": 1},
                "cabin": {"enum": ["economy", "premium_economy", "business", "first"]},
                "max_stops": {"type": "integer", "minimum": 0, "maximum": 3},
                "currency": {"type": "string", "default": "USD"},
            },
            "required": ["origin", "destination", "depart_date"],
            "additionalProperties": False,
        },
    ),
    ToolDef(
        name="edit_file",
        description="Replace exact text in a file. old_string must appear exactly once in the "
        "file unless replace_all is true; include enough surrounding lines to make it unique. "
        "Read the file first: an edit to a file you have not read is refused.",
        input_schema={
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Absolute path of the file."},
                "old_string": {"type": "string", "minLength": 1},
                "new_string": {"type": "string"},
                "replace_all": {"type": "boolean", "default": False},
            },
            "required": ["path", "old_string", "new_string"],
            "additionalProperties": False,
        },
    ),
    ToolDef(
        name="create_calendar_event",
        description="Create an event in the user's calendar and optionally invite attendees. "
        "Times are ISO 8601 with an offset. Check availability with find_free_slots first when "
        "the user has not named a time.",
        input_schema={
            "type": "object",
            "properties": {
                "title": {"type": "string", "maxLength": 200},
                "start": {"type": "string", "format": "date-time"},
                "end": {"type": "string", "format": "date-time"},
                "location": {"type": "string"},
                "attendees": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "email": {"type": "string", "format": "email"},
                            "optional": {"type": "boolean", "default": False},
                        },
                        "required": ["email"],
                    },
                    "maxItems": 50,
                },
                "reminders_minutes": {"type": "array", "items": {"type": "integer"},
                                      "default": [10]},
                "visibility": {"enum": ["default", "public", "private"]},
                "video_call": {"type": "boolean", "description": "Attach a meeting link."},
            },
            "required": ["title", "start", "end"],
        },
    ),
    ToolDef(
        name="query_metrics",
        description="Run a PromQL query against the metrics store and return the series as "
        "JSON. Keep ranges short: more than 11,000 points per series is an error. Use step to "
        "downsample.",
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description":
                          "PromQL, e.g. sum(rate(http_requests_total{status=~\"5..\"}[5m]))"},
                "start": {"type": "string", "format": "date-time"},
                "end": {"type": "string", "format": "date-time"},
                "step_seconds": {"type": "integer", "minimum": 1, "default": 60},
                "timeout_seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": 120},
            },
            "required": ["query", "start", "end"],
            "additionalProperties": False,
        },
    ),
]


def _use(call_id: str, name: str, args: dict[str, Any]) -> ToolUseBlock:
    return ToolUseBlock(id=call_id, name=name, input=args)


TOOL_BLOCKS: list[ToolUseBlock | ToolResultBlock] = [
    _use("toolu_01XbQ2m8tYp4cRzKa7VdE5nF", "edit_file", {
        "path": "/srv/app/billing/invoices.py",
        "old_string": "    if invoice.due_date < today:\n        invoice.status = \"overdue\"\n",
        "new_string": "    if invoice.due_date < today and invoice.status != \"paid\":\n"
                      "        invoice.status = \"overdue\"\n"
                      "        notify_customer(invoice, template=\"overdue_reminder\")\n",
    }),
    ToolResultBlock(tool_use_id="toolu_01XbQ2m8tYp4cRzKa7VdE5nF",
                    content="The file /srv/app/billing/invoices.py has been updated. Here's the "
                    "result of running `cat -n` on a snippet of the edited file:\n"
                    "   41\t    for invoice in open_invoices:\n"
                    "   42\t        today = date.today()\n"
                    "   43\t    if invoice.due_date < today and invoice.status != \"paid\":\n"
                    "   44\t        invoice.status = \"overdue\"\n"
                    "   45\t        notify_customer(invoice, template=\"overdue_reminder\")\n"
                    "   46\t        invoice.save(update_fields=[\"status\"])\n"),
    _use("toolu_01Hk9WqZr3LmN8sTu2VbX6Ya", "search_flights", {
        "origin": "HAN", "destination": "NRT", "depart_date": "2027-03-14",
        "return_date": "2027-03-22", "passengers": 2, "cabin": "economy", "max_stops": 1,
    }),
    ToolResultBlock(tool_use_id="toolu_01Hk9WqZr3LmN8sTu2VbX6Ya", content="""{"results": [
  {"carrier": "VN", "flight": "VN310", "depart": "2027-03-14T00:05+07:00", "arrive": "2027-03-14T07:35+09:00", "stops": 0, "price": {"amount": 412.60, "currency": "USD"}, "fare_class": "Q"},
  {"carrier": "JL", "flight": "JL752", "depart": "2027-03-14T08:50+07:00", "arrive": "2027-03-14T16:05+09:00", "stops": 0, "price": {"amount": 468.00, "currency": "USD"}, "fare_class": "S"},
  {"carrier": "CX", "flight": "CX790/CX524", "depart": "2027-03-14T10:40+07:00", "arrive": "2027-03-14T20:55+09:00", "stops": 1, "via": ["HKG"], "price": {"amount": 351.25, "currency": "USD"}, "fare_class": "V"}
], "searched_at": "2027-02-01T09:12:44Z", "currency": "USD", "count": 3}"""),
    _use("toolu_01Rt5GvBn7JsKq2PwL9MxC4e", "bash", {
        "command": "cd /srv/app && python -m pytest -q tests/billing -x -k overdue",
        "timeout": 300,
    }),
    ToolResultBlock(tool_use_id="toolu_01Rt5GvBn7JsKq2PwL9MxC4e", is_error=True, content="""\
..F
=================================== FAILURES ===================================
______________________ test_paid_invoice_is_never_overdue ______________________

    def test_paid_invoice_is_never_overdue(make_invoice, freezer):
        invoice = make_invoice(due_date=date(2027, 1, 31), status="paid")
        freezer.move_to("2027-02-15")
>       mark_overdue_invoices()

tests/billing/test_overdue.py:38:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
billing/invoices.py:46: in mark_overdue_invoices
    invoice.save(update_fields=["status"])
E   NameError: name 'invoice' is not defined
=========================== short test summary info ============================
FAILED tests/billing/test_overdue.py::test_paid_invoice_is_never_overdue - NameError
1 failed, 2 passed, 41 deselected in 0.84s"""),
    _use("toolu_01Lp8DcF2aVe6HyWs3QnT7Ru", "query_metrics", {
        "query": "histogram_quantile(0.99, sum by (le, route) "
                 "(rate(http_request_duration_seconds_bucket{service=\"checkout\"}[5m])))",
        "start": "2027-02-01T08:00:00Z", "end": "2027-02-01T09:00:00Z", "step_seconds": 300,
    }),
    ToolResultBlock(tool_use_id="toolu_01Lp8DcF2aVe6HyWs3QnT7Ru", content="""\
route                     08:00   08:05   08:10   08:15   08:20   08:25   08:30
/api/cart                 0.182   0.190   0.177   0.201   0.645   1.210   0.930
/api/checkout/confirm     0.412   0.398   0.455   0.501   2.874   4.102   3.337
/api/payment/intent       0.233   0.241   0.229   0.260   1.905   3.448   2.716
/api/shipping/quote       0.098   0.101   0.097   0.110   0.122   0.131   0.118
(4 series, 7 points each; unit: seconds; p99 over 5m windows)"""),
]
