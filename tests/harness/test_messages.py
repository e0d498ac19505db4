"""The value types' own arithmetic."""

from __future__ import annotations

from harness.messages import Usage


def test_usage_adds_counter_by_counter_and_totals_all_four():
    a = Usage(input_tokens=1, output_tokens=2, cache_read_tokens=3, cache_write_tokens=4)
    b = Usage(input_tokens=10, output_tokens=20, cache_read_tokens=30, cache_write_tokens=40)
    assert a + b == Usage(input_tokens=11, output_tokens=22, cache_read_tokens=33,
                          cache_write_tokens=44)
    assert a.total == 10 and (a + b).total == 110 and Usage().total == 0
