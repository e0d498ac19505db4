"""Every environment variable the hango server reads, grouped by what it configures, each with
its type, its default and, in its docstring, what it means.

The groups hold fields only: :class:`hango_project.config.HangoSettings` combines them into the
one settings object and decides how the environment is read. A variable is ``HANGO_<FIELD>``
unless its field names its own (``validation_alias``): Django's and the providers'
conventional names, and a few older hango names kept as they were.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import AliasChoices, AliasGenerator, BaseModel, ConfigDict, Field, SecretStr
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from harness import deps
from harness.agent import DEFAULT_MAX_TURNS

BASE_DIR = Path(__file__).resolve().parent.parent

_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def _hango_variable(field: str) -> str:
    return f"HANGO_{field.upper()}"


def _redis_or_none(data: dict[str, Any]) -> str:
    broker: str = data["broker_url"]
    return broker if broker.startswith(_REDIS_SCHEMES) else ""


# A comma-separated list, not the JSON pydantic-settings expects of a list by default.
CommaList = Annotated[list[str], NoDecode]


class _Variables(BaseSettings):
    """A group of variables: each field's variable is named by its alias, and what it means is
    the docstring under it."""

    model_config = SettingsConfigDict(
        alias_generator=AliasGenerator(validation_alias=_hango_variable),
        use_attribute_docstrings=True,
    )


class ProcessVariables(_Variables):
    """Django and the process: local state, hosts, the database and its pool, logging."""

    var_dir: Path = BASE_DIR / "var"
    """Local state: the embedded database, the local secret key, static files (git-ignored)."""
    static_root: Path = Field(default_factory=lambda data: data["var_dir"] / "static")
    """Where static files are collected; ``static`` under ``var_dir`` unless set."""
    secret_key: SecretStr | None = Field(None, validation_alias="DJANGO_SECRET_KEY")
    """Django's secret key; unset, a random key kept in ``var_dir``. Set it wherever more than one
    process serves."""
    debug: bool = Field(False, validation_alias="DJANGO_DEBUG")
    """Django's debug mode, for development (the quickstart sets it)."""
    allowed_hosts: CommaList = Field(
        ["127.0.0.1", "localhost", "[::1]", "testserver"], validation_alias="DJANGO_ALLOWED_HOSTS")
    """Host names this server answers for, comma-separated."""
    csrf_trusted_origins: CommaList = Field([], validation_alias="DJANGO_CSRF_TRUSTED_ORIGINS")
    """Origins trusted for the admin's CSRF check behind a proxy, comma-separated."""
    database_url: SecretStr | None = Field(None, validation_alias="DATABASE_URL")
    """``postgres://user:pass@host:port/db`` (psycopg2); unset, a SQLite file in ``var_dir``."""
    database_conn_max_age: int = Field(60, validation_alias="DATABASE_CONN_MAX_AGE")
    """Seconds a database connection is kept open for reuse (its pool then opens a fresh one)."""
    database_pool_size: int = Field(10, ge=1)
    """PostgreSQL connections each process may have open at once: its threads (a gevent
    worker's runs, a gevent web process's requests) take one in turn and give it back after
    each statement or transaction they need it for, before a model call or at a request's end."""
    database_pool_timeout: float = Field(30, gt=0)
    """Seconds a thread waiting for one of its process's connections goes on while none is given
    back, before its statement fails as the database being unavailable would. A wait in a moving
    queue (connections given back to the takers ahead) is not bounded: it is backpressure."""
    database_idle_in_transaction_seconds: float = Field(10, gt=0)
    """PostgreSQL ends a session that sits this long inside a transaction, releasing its locks:
    a process stopped mid-transaction (SIGSTOP, a VM pause) cannot hold a run's row and block
    a cancel or the reconciler for longer."""
    log_level: str = "INFO"
    """The root log level."""


class WorkVariables(_Variables):
    """Background work: the Celery broker and workers, webhook deliveries, schedules, triggers."""

    broker_url: str = Field("", validation_alias=AliasChoices("CELERY_BROKER_URL",
                                                              "HANGO_BROKER_URL"))
    """The Celery broker (Redis); empty, no broker: run work executes in-process."""
    broker_timeout: float = Field(3, gt=0)
    """Seconds connecting to the broker, or one broker command, may take before it counts as
    failed. A send is retried once, so a request waits at most about twice this when the broker
    is unreachable or hung (a refused connection fails at once); the run is stored anyway, and
    the reconciler sends it later. Keep it above one second: a worker's idle poll of Redis
    answers after one second."""
    worker_concurrency: int = Field(1000, ge=1)
    """Runs a worker process advances at once (its gevent pool's size); the queue holds the
    rest. A run waiting on its model costs a greenlet and its state, no connection."""
    worker_processes: int | None = Field(None, ge=1)
    """Worker processes ``make worker`` starts as one group (:mod:`hango_project.worker_group`),
    each with its own pool of ``worker_concurrency`` runs and of database connections; unset,
    one per CPU the group may run on. A gevent process uses one core: a turn's CPU of every run
    it holds shares it."""
    tenant_fair_share: int = Field(20, ge=1)
    """Runs of one tenant, queued or running, whose tasks go at the normal priority; the
    tenant's runs past that go behind every normal one, so another tenant's new run does not
    wait behind one tenant's backlog (:mod:`runs.execution.fairness`)."""
    visibility_timeout: int = 3600
    """Seconds after which Redis redelivers an unacknowledged task; must exceed the longest task,
    one run slice plus one turn."""
    result_backend_url: str = Field(default_factory=_redis_or_none)
    """Where the answers of ``hango.send_message`` tasks are kept for their senders (a day);
    runs' tasks keep none."""
    webhook_timeout_seconds: float = Field(10, gt=0)
    """Seconds a webhook delivery attempt may take (connect and answer)."""
    webhook_max_attempts: int = Field(8, ge=1)
    """Attempts a webhook delivery gets before it counts as failed."""
    webhook_retry_base_seconds: float = Field(5, gt=0)
    """The pause after a delivery's first failed attempt; each next one is six times longer,
    at most 4 hours (webhooks/delivery.py)."""
    webhook_allow_private: bool = False
    """Allow webhook URLs that resolve to loopback, private or link-local addresses (a receiver
    on the same network); refused by default, as a request to them from hango's network could
    reach what the outside cannot (SSRF)."""
    webhook_secret_overlap_seconds: int = Field(86400, ge=0)
    """After a webhook secret's rotation, how long the previous one still signs too."""
    schedule_tick_seconds: float = Field(1, gt=0)
    """How often each worker's reconciler thread fires the schedules that are due."""
    schedule_grace_seconds: float = Field(120, gt=0)
    """A schedule's fire time missed by more than this (no worker up, the database down) is
    skipped and counted, not fired late."""
    schedule_pause_after_failures: int = Field(3, ge=0)
    """A new schedule pauses itself after this many runs in a row failed (0: never); each
    schedule may set its own."""
    trigger_order_wait_seconds: float = Field(30, ge=0)
    """How long a ``hango.send_message`` message with a ``sequence`` waits for the message
    before it in its session; then it is refused (:mod:`runs.intake.triggers`)."""


class ApiVariables(_Variables):
    """The API: API keys, pages, request bodies, rate limits and quota reservations."""

    key_last_used_resolution_seconds: int = Field(
        60, validation_alias="HANGO_KEY_LAST_USED_RESOLUTION")
    """Seconds between writes of an API key's last-used time."""
    page_size: int = 50
    """List pages: the default ``?limit=``."""
    max_page_size: int = 200
    """List pages: the largest ``?limit=``."""
    max_body_bytes: int = 1024 * 1024
    """The request body cap; larger bodies answer 413."""
    rate_limit_per_minute: int = 600
    """Requests per minute per API key unless the key or its tenant sets one (0 = no limit); allowed
    when the Redis it counts in is down."""
    rate_limit_redis_url: str = Field(default_factory=_redis_or_none)
    """The Redis the rate limit counts in, so the limit holds across web processes; by default the
    broker's if it is Redis. Empty: an in-process counter (then the limit is per process)."""
    quota_run_reservation_tokens: int = 1000
    """Tokens each queued or running run reserves against its tenant's quota when another run asks
    to start, so concurrent starts cannot overspend a nearly spent quota."""
    idempotency_key_hours: int = Field(24, ge=24)
    """Hours an ``Idempotency-Key`` and its first answer are kept (at least a day); each worker's
    reconciler removes older ones every 10 minutes."""


class AgentVariables(_Variables):
    """Agents and their context: prompts, turns, memory, skills, large tool results, subagents."""

    max_system_prompt_chars: int = 200_000
    """The longest agent system prompt."""
    default_max_turns: int = DEFAULT_MAX_TURNS
    """Turns per run unless the agent's ``config.max_turns`` says otherwise."""
    repeat_call_threshold: int = deps.REPEAT_CALL_THRESHOLD
    """Identical tool calls in a run before a reminder replaces the call."""
    memory_max_bytes: int = deps.MEMORY_MAX_BYTES
    """The most memory content a run puts in its prompt, which also caps one file (UTF-8 bytes)."""
    memory_max_files: int = 64
    """Memory files per agent."""
    context_load_timeout: float = 2
    """Seconds the once-per-run memory and skills loads may take (PostgreSQL statement timeout)."""
    skill_max_instructions_chars: int = 100_000
    """The longest skill instructions."""
    large_tool_result_chars: int = deps.LARGE_TOOL_RESULT_CHARS
    """Tool results longer than this (characters) are saved to a session file and replaced by a
    pointer and a preview (at least 4000)."""
    subagent_max_depth: int = deps.SUBAGENT_MAX_DEPTH
    """Subagent nesting depth (1 = a run's subagents start none)."""
    subagent_max_turns: int = deps.SUBAGENT_MAX_TURNS
    """Each subagent's turn limit."""


class RunVariables(_Variables):
    """Runs: leases, slices, cancellation, the reconciler and the event stream."""

    run_lease_seconds: float = 60
    """A worker's lease on a run, renewed every third of it while the worker lives; a dead
    worker's run is taken over about this long after it died."""
    run_slice_seconds: int = 300
    """A worker hands a run back (and re-enqueues it) after this long, keeping every task short."""
    cancel_poll_seconds: float = 0.25
    """How old a run's cancel flag may be when it is checked before a tool call: each worker
    process reads all its runs' flags at once twice in this time (runs/execution/leases.py)."""
    reconcile_seconds: int = Field(30, gt=0)
    """How often each worker's reconciler looks for stranded runs (a thread of the worker's main
    process, :mod:`runs.execution.reconciler`). A dead worker's run is taken over within the lease
    and this interval (and a slice, if every worker is busy)."""
    reconcile_grace_seconds: int = 30
    """How old a queued run without a lease must be before the reconciler re-enqueues it."""
    run_inline: bool = False
    """Run work synchronously when its transaction commits (tests of the API without a worker)."""
    event_poll_seconds: float = 0.5
    """How often a run's event stream polls for new events when it follows no live channel
    (runs do not stream, or its Redis is away)."""
    event_live_poll_seconds: float = Field(5, gt=0)
    """With a live channel a stream reads new events when told of them (the worker's, or a
    request's, marker on the run's channel), and polls this often in case a marker was lost."""
    event_stream_max_seconds: int = 300
    """How long one event stream lasts (clients reconnect with Last-Event-ID)."""


class LiveVariables(_Variables):
    """Live deltas: a model's text sent to a run's followers as it is written."""

    stream_deltas: bool = True
    """Runs ask a model that can stream for its stream and send its text deltas to the run's
    followers as they arrive (``message.delta`` on the event stream, never stored); off, each
    model call is answered whole."""
    live_redis_url: str = Field(default_factory=_redis_or_none)
    """The Redis the deltas travel through (pub/sub), so a follower on any web process sees any
    worker's; by default the broker's if it is Redis. Empty: in-process, seen only by followers
    the process running the model serves (the embedded quickstart is one process)."""
    live_publish_timeout: float = Field(0.25, gt=0)
    """Seconds connecting to the deltas' Redis, or a write that blocks, may take (a delta is
    written without waiting for its reply). Nothing is retried: after a failure the process
    drops deltas for five seconds, so a Redis outage costs a run at most this long every five
    seconds, and the run itself goes on."""


class ProviderVariables(_Variables):
    """Model providers: timeouts, retries, the scripted models, each adapter's key and endpoint."""

    provider_timeout_seconds: float = Field(120, validation_alias="HANGO_PROVIDER_TIMEOUT")
    """Seconds one model call may take."""
    provider_max_retries: int = 3
    """Retries of a model call on 429, 5xx and overload."""
    context_try_timeout: float = 120
    """Seconds a context-inspector try call may take."""
    scripted_delay_ms: int = 0
    """Slows the offline scripted models down, so a demo (or a test) can watch a run progress."""
    scripted_word_delay_ms: int = 0
    """Milliseconds between the words the offline scripted models stream (the quickstart sets
    it, so a follower sees the answer being written)."""
    anthropic_api_key: SecretStr | None = Field(None, validation_alias="ANTHROPIC_API_KEY")
    """The Anthropic adapter's key."""
    anthropic_base_url: str | None = Field(None, validation_alias="ANTHROPIC_BASE_URL")
    """The Anthropic adapter's endpoint, if not Anthropic's own."""
    openai_api_key: SecretStr | None = Field(None, validation_alias="OPENAI_API_KEY")
    """The OpenAI-compatible adapter's key."""
    openai_base_url: str | None = Field(None, validation_alias="OPENAI_BASE_URL")
    """The OpenAI-compatible adapter's endpoint: any OpenAI-compatible server (vLLM, Ollama, …)."""


# An operator's stdio server's name, as an MCP server's ``command`` names it (in pydantic's
# regular expressions ``$`` is the end of the text).
StdioName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]


class StdioServer(BaseModel):
    """A program the operator lets MCP servers of transport ``stdio`` start on the workers: a
    tenant names an entry, never a program."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    command: str = Field(min_length=1)
    """The program (a path, or a name found on the worker's ``PATH``)."""
    args: list[str] = []
    """Its arguments."""
    env: dict[str, str] = {}
    """Its environment (with none, the SDK's safe default set of the worker's own)."""


class McpVariables(_Variables):
    """MCP servers as tool sources: where they may be, the programs stdio ones run, time limits."""

    mcp_allow_private: bool = False
    """Allow MCP server URLs that resolve to loopback, private or link-local addresses (a
    server on the same network); refused by default, as for webhooks (SSRF)."""
    mcp_stdio_servers: Annotated[dict[StdioName, StdioServer], NoDecode] = {}
    """The stdio MCP servers tenants may use, as a JSON object: name -> ``{"command": str,
    "args": [str], "env": {str: str}}``; an MCP server of transport ``stdio`` names one (a tenant
    never gives a program). Checked at start-up."""
    mcp_timeout_seconds: float = Field(30, ge=1, le=600)
    """An MCP server's per-call (and listing) time limit unless the server sets its own."""
    mcp_max_result_chars: int = Field(1_000_000, ge=1)
    """The most of one MCP tool result a run keeps (characters); the rest is cut, saying so."""
