"""The harness's one exception tree. Adapters map SDK errors into these in one place each."""

from __future__ import annotations


class HarnessError(Exception):
    """Base of every error the harness raises on purpose."""

    code = "harness_error"


class RunCannotGoOn(HarnessError):
    """Raised by a tool, before it sends anything, when the run must stop rather than answer
    the model (its ``code`` says why, and whether a resume may fix it): a tool's other
    failures are results the model reads."""

    code = "run_cannot_go_on"


class Superseded(Exception):
    """The run was taken from this worker — cancelled, resumed, or claimed by another worker —
    so a store refused its write. Not a :class:`HarnessError`: no turn turns it into a result;
    it unwinds the run, and the worker stops without writing anything more."""


class InvalidContent(HarnessError):
    """A block, message or state document does not have the documented shape."""

    code = "invalid_content"


class ConfigurationError(HarnessError):
    """A stack, tool or provider was set up wrongly (caught at build time, not mid-run)."""

    code = "configuration_error"


class ProviderError(HarnessError):
    """A model provider failed. ``retryable`` says whether trying again later may succeed."""

    code = "provider_error"
    retryable = False

    def __init__(self, message: str, *, status: int | None = None, provider: str = ""):
        super().__init__(message)
        self.status = status
        self.provider = provider


class ProviderAuthError(ProviderError):
    code = "provider_auth"


class ProviderBadRequest(ProviderError):
    code = "provider_bad_request"


class ProviderRateLimited(ProviderError):
    code = "provider_rate_limited"
    retryable = True


class ProviderOverloaded(ProviderError):
    code = "provider_overloaded"
    retryable = True


class ProviderUnavailable(ProviderError):
    """5xx, connection failures and timeouts after the adapter's own retries."""

    code = "provider_unavailable"
    retryable = True


class ScriptExhausted(ProviderError):
    """The scripted model was called more often than it has steps."""

    code = "script_exhausted"


class UnknownModel(ConfigurationError):
    code = "unknown_model"


class QuotaReached(HarnessError):
    """The quota cannot cover the next model call's worst case, so it was not sent (the code
    is the API's 402 ``quota_exceeded``: a run failed with it can be resumed)."""

    code = "quota_exceeded"


def retryable_codes() -> frozenset[str]:
    """The codes of every :class:`ProviderError` that trying again later may get past (those
    whose class says ``retryable``): a run failed with one of them can be resumed."""
    codes, classes = set(), [ProviderError]
    while classes:
        cls = classes.pop()
        classes += cls.__subclasses__()
        if cls.retryable:
            codes.add(cls.code)
    return frozenset(codes)
