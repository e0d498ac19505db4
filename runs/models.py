"""Sessions, their messages and the runs that answer them."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Member, Tenant, TokenCounts
from accounts.scoping import Tenancy
from agents.models import Agent, PathFile
from hango_project.ids import time_ordered_uuid
from hango_project.models import TextJSONField
from runs.tracing import current_traceparent
from webhooks.models import Endpoint


class SessionKind(models.TextChoices):
    CHAT = "chat"
    # An eval run's case (evals app): kept out of the member's lists and the admin's default one.
    EVAL = "eval"


class Session(models.Model):
    tenancy = Tenancy(tenant="tenant", owner="member")

    id = models.UUIDField(primary_key=True, default=time_ordered_uuid, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="sessions")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="sessions")
    # The agent's version its runs execute (its number); null: the latest, whichever it is.
    agent_version = models.PositiveIntegerField(null=True, blank=True)
    member = models.ForeignKey(Member, on_delete=models.CASCADE, related_name="sessions")
    title = models.CharField(max_length=200, blank=True, default="")
    # The compaction summary of messages seq 1..summary_seq (0: none); the stored messages
    # themselves are never changed.
    summary = models.TextField(blank=True, default="")
    summary_seq = models.PositiveIntegerField(default=0)
    kind = models.CharField(max_length=16, choices=SessionKind.choices, default=SessionKind.CHAT,
                            db_default=SessionKind.CHAT)
    # Context overrides applied on top of the stored ones and never saved as such (an eval's:
    # the Context panel's selection): [{"part", "action", "replacement"?}], as harness.context.
    overrides = models.JSONField(default=list, db_default=models.Value([], models.JSONField()),
                                 blank=True)
    # An eval session's own memory files, {"/path": content}, read and written by its runs in
    # place of the agent's (runs.execution.session_memory); null: the agent's, until a run of
    # the eval writes one. Only an eval's session has any (a constraint).
    memory = models.JSONField(null=True, blank=True, default=None)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "sessions"
        indexes = [models.Index(fields=["tenant", "member", "-created_at"])]
        constraints = [models.CheckConstraint(
            condition=Q(memory__isnull=True) | Q(kind=SessionKind.EVAL),
            name="session_memory_only_eval")]

    def __str__(self) -> str:
        return self.title or str(self.id)


class Role(models.TextChoices):
    USER = "user"
    ASSISTANT = "assistant"


class RunStatus(models.TextChoices):
    # Waiting for the session's runs before it to end (a message posted with multitask enqueue
    # or interrupt while a run was active): its message is not in the history yet.
    PENDING = "pending"
    QUEUED = "queued"
    RUNNING = "running"
    AWAITING_APPROVAL = "awaiting_approval"
    # Parked until the API's caller sends the results of its client tools' calls
    # (POST /v1/runs/{id}/tool-results), no human decision missing (harness.client_calls).
    REQUIRES_ACTION = "requires_action"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


# Parked: its tool batch waits for a human's decision or the caller's results; no worker holds
# it, and only those answers (or a cancel, or an expiry) move it.
PARKED_RUN_STATUSES = (RunStatus.AWAITING_APPROVAL, RunStatus.REQUIRES_ACTION)
# A session has at most one run in these states (a database constraint enforces it).
ACTIVE_RUN_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING, *PARKED_RUN_STATUSES)
# Queued or running: the runs a worker has or will have (a parked run holds none).
BUSY_RUN_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING)
# Not finished yet: active, or pending behind the active one.
UNFINISHED_RUN_STATUSES = (RunStatus.PENDING, *ACTIVE_RUN_STATUSES)
# Not ended and not parked: what ``GET /v1/runs/{id}?wait=`` waits out.
MOVING_RUN_STATUSES = (RunStatus.PENDING, *BUSY_RUN_STATUSES)
# The key of a completed run's ``state_json`` that says where its answer is:
# ``{"seq": <its last assistant message>, "stop_reason"}`` (runs.execution.checkpointer).
ANSWER = "answer"


class Run(TokenCounts):
    tenancy = Tenancy(tenant="session__tenant", owner="session__member")

    id = models.UUIDField(primary_key=True, default=time_ordered_uuid, editable=False)
    # No index of its own: (session, -created_at) serves every lookup by session.
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="runs",
                                db_index=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="runs")
    # The number of the agent's version the run executes, fixed when it is created; null for a
    # run older than versions (it executes the agent as it is).
    agent_version = models.PositiveIntegerField(null=True, blank=True, editable=False)
    status = models.CharField(max_length=32, choices=RunStatus.choices, default=RunStatus.QUEUED)
    # The checkpoint: todos and every middleware's private state, written at each turn boundary.
    state_json = TextJSONField(default=dict, db_default=models.Value({}, TextJSONField()))
    turn = models.PositiveIntegerField(default=0)
    error = models.JSONField(null=True, blank=True, help_text='{"code", "message"} when failed.')
    # Set by the API; the worker honours it at the next turn boundary or tool call.
    cancel_requested = models.BooleanField(default=False)
    # The lease: which worker may advance the run, until when, under which fencing epoch. Every
    # claim increments the epoch; a turn commits only while the epoch is still the claimer's.
    lease_owner = models.CharField(max_length=200, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    epoch = models.PositiveBigIntegerField(default=0)
    # When the client tools' calls it is parked on are answered as failed (the agent's
    # client_tool_timeout after the park; null: none waits, or they wait for ever).
    action_expires_at = models.DateTimeField(null=True, blank=True)
    # Per-run event sequence, advanced under the run's row lock.
    event_seq = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The webhook endpoint told of this run's end besides its agent's: named by the trigger
    # message or the schedule that started it (runs/execution/webhooked.py).
    webhook = models.ForeignKey(Endpoint, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="+", db_index=False)
    # The traceparent of the request that created the run: its slices continue that trace
    # (runs/tracing.py). Never in the API.
    trace_context = models.CharField(max_length=55, blank=True, default=current_traceparent,
                                     db_default="", editable=False)

    class Meta:
        db_table = "runs"
        indexes = [
            models.Index(fields=["session", "-created_at"]),
            # An endpoint's runs, for its deletion: only the few runs that name one.
            models.Index(fields=["webhook"], condition=Q(webhook__isnull=False),
                         name="run_by_webhook"),
            # A tenant's runs queued or running, through its agents (runs/execution/fairness.py):
            # small however many runs and sessions the tenant has had.
            models.Index(fields=["agent"], condition=Q(status__in=BUSY_RUN_STATUSES),
                         name="run_busy_by_agent"),
            # The parked runs whose client calls expire, soonest first (runs.intake.client_results):
            # only the few that wait on a deadline.
            models.Index(fields=["action_expires_at"],
                         condition=Q(action_expires_at__isnull=False), name="run_action_expiry"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=RunStatus.values), name="run_status_valid"
            ),
            models.UniqueConstraint(
                fields=["session"],
                condition=Q(status__in=ACTIVE_RUN_STATUSES),
                name="run_one_active_per_session",
            ),
        ]

    def __str__(self) -> str:
        return f"run {self.id} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_RUN_STATUSES


class Message(models.Model):
    tenancy = Tenancy(tenant="session__tenant", owner="session__member")

    id = models.UUIDField(primary_key=True, default=time_ordered_uuid, editable=False)
    # No index of its own: the (session, seq) unique index serves every lookup by session.
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="messages",
                                db_index=False)
    seq = models.PositiveIntegerField()
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.JSONField(help_text="A list of content blocks.")
    # Its content's tokens as the run's tokenizer counted them, and that count's key
    # (harness.tokens.base.Tokenizer.counts_key): the inspector's first look at a long session takes
    # them instead of counting every message again. Empty where no run counted it.
    content_tokens = models.PositiveIntegerField(null=True, blank=True)
    tokens_counter = models.CharField(max_length=100, blank=True, default="")
    # The run it started or that wrote it, kept as a ledger keeps it (accounts.models.
    # UsageRecord): after that run is deleted too, and with no index and no foreign-key
    # constraint, which only the run's deletion would use. Every turn writes messages; nothing
    # reads them by run (the turn's statement takes both its ids from the run's locked row).
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.DO_NOTHING,
                            related_name="messages", db_index=False, db_constraint=False)
    # When it was posted: a message that waited in its session's queue keeps its post time.
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        db_table = "messages"
        ordering = ["session", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["session", "seq"], name="message_seq_unique"),
            models.CheckConstraint(condition=Q(seq__gte=1), name="message_seq_positive"),
            models.CheckConstraint(condition=Q(role__in=Role.values), name="message_role_valid"),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.role}"


class PendingMessage(models.Model):
    """A user message posted while its session had an active run (``multitask`` ``enqueue`` or
    ``interrupt``). It waits here, out of the history, until every run before it has ended; it
    then joins the history as the message ``message_id`` with the session's next seq, and its
    run (``pending`` meanwhile) starts (:mod:`runs.execution.queue`)."""

    tenancy = Tenancy(tenant="session__tenant", owner="session__member")

    # The queue's order: assigned under the session's lock (runs.execution.queue.lock_session), so
    # it is the order of the posts.
    position = models.BigAutoField(primary_key=True)
    # No index of its own: the (session, position) index serves every lookup by session.
    session = models.ForeignKey(Session, on_delete=models.CASCADE,
                                related_name="pending_messages", db_index=False)
    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="pending_message")
    message_id = models.UUIDField(default=time_ordered_uuid, unique=True,
                                  help_text="The id the message has once it joins the history.")
    content = models.JSONField(help_text="A list of content blocks.")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        db_table = "pending_messages"
        indexes = [models.Index(fields=["session", "position"])]

    def __str__(self) -> str:
        return f"pending {self.message_id}"

    def as_message(self) -> Message:
        """The message it will be, unsaved: no seq (None) until it joins the history."""
        return Message(id=self.message_id, session_id=self.session_id, role=Role.USER,
                       content=self.content, run_id=self.run_id, created_at=self.created_at)


class RunEvent(models.Model):
    """Something a client following a run wants to know, in order (``seq`` per run)."""

    tenancy = Tenancy(tenant="run__session__tenant", owner="run__session__member")

    # The key is (run, seq): every read is a run's events in seq order, and each turn writes
    # one index for its events instead of two (a surrogate id's and this one). The admin cannot
    # register a model with a composite key; a run's page lists its events (runs/admin.py).
    pk = models.CompositePrimaryKey("run", "seq")
    # The foreign-key constraint stays, though its check locks and logs the run's row at each
    # turn (54 WAL bytes; a message's does the same to the session's): the ORM deletes a run's
    # events before the run, without locking it first, so a turn committed in between would
    # leave events (and messages) of a deleted run behind; the constraint fails that delete.
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events", db_index=False)
    seq = models.PositiveBigIntegerField()
    type = models.CharField(max_length=64)
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "run_events"

    def __str__(self) -> str:
        return f"{self.run_id} #{self.seq} {self.type}"


class SessionFile(PathFile):
    """A file of the session's virtual filesystem (written by the agent's file tools)."""

    tenancy = Tenancy(tenant="session__tenant", owner="session__member")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="files",
                                db_index=False)

    class Meta:
        db_table = "session_files"
        ordering = ["session", "path"]
        constraints = [
            models.UniqueConstraint(fields=["session", "path"], name="session_file_path_unique"),
            models.CheckConstraint(condition=Q(path__startswith="/"), name="file_path_absolute"),
        ]


class Trigger(models.Model):
    """A message another service sent through the broker (the ``hango.send_message`` task,
    :mod:`runs.intake.triggers`) and hango took: kept so that the same idempotency key answers with
    the same run however often it comes, and so that a session's messages sent with a ``sequence``
    are taken in that order."""

    tenancy = Tenancy(tenant="tenant", owner="member")

    id = models.UUIDField(primary_key=True, default=time_ordered_uuid, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="triggers")
    # The signing key's member: the session and the run are theirs.
    member = models.ForeignKey(Member, on_delete=models.CASCADE, related_name="triggers")
    api_key = models.ForeignKey("accounts.ApiKey", null=True, on_delete=models.SET_NULL,
                                related_name="triggers")
    idempotency_key = models.CharField(max_length=200)
    # What the message asked for and whose it is (SHA-256 of its canonical JSON without the
    # idempotency key and the signing key's prefix, with the key's member): the same
    # idempotency key with another message, or from another member, is refused, not answered
    # with this run.
    fingerprint = models.CharField(max_length=64)
    # Kept when the session or the run is deleted: a replayed message stays a duplicate.
    session = models.ForeignKey(Session, null=True, on_delete=models.SET_NULL,
                                related_name="triggers")
    run = models.ForeignKey(Run, null=True, on_delete=models.SET_NULL, related_name="triggers")
    sequence = models.PositiveBigIntegerField(null=True, blank=True)
    # The endpoint the message asked to be told of its run's end, besides the agent's.
    webhook = models.ForeignKey(Endpoint, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="triggers")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "triggers"
        constraints = [
            models.UniqueConstraint(fields=["tenant", "idempotency_key"],
                                    name="trigger_idempotency_key"),
            models.UniqueConstraint(fields=["session", "sequence"],
                                    condition=Q(sequence__isnull=False),
                                    name="trigger_session_sequence"),
        ]

    def __str__(self) -> str:
        return self.idempotency_key


class ToolCallStart(models.Model):
    """A call to an MCP server not marked idempotent, recorded under its run's claim before it
    was sent: a worker that takes the run over finds a call sent but unanswered here and does
    not send it again blindly (:mod:`harness.middleware.mcp`). One row per idempotency key: a
    model may reuse a call id in a later turn, never a key."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="tool_call_starts",
                            db_index=False)
    tool_use_id = models.CharField(max_length=200)
    tool = models.CharField(max_length=200)  # "<server>/<tool>"
    key = models.CharField(max_length=300)  # the idempotency key the call carried
    epoch = models.BigIntegerField()  # the claim that sent it
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "tool_call_starts"
        constraints = [models.UniqueConstraint(fields=["run", "key"],
                                               name="tool_call_start_once_per_key")]

    def __str__(self) -> str:
        return f"{self.tool} {self.tool_use_id}"
