"""runs.intake.services: what a failed run may be resumed from."""

from __future__ import annotations

from harness.errors import retryable_codes
from runs.intake.services import RESUMABLE_ERRORS


def test_resumable_errors_are_the_retryable_provider_errors_a_crash_and_the_quota():
    assert retryable_codes() == {"provider_unavailable", "provider_overloaded",
                                 "provider_rate_limited"}
    assert RESUMABLE_ERRORS == {"internal_error", "provider_unavailable", "provider_overloaded",
                                "provider_rate_limited", "quota_exceeded",
                                "mcp_server_unavailable", "credential_missing"}
