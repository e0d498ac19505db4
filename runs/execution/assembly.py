"""Building a run's harness objects from database rows (the only place Django meets the harness
on the worker side, with :mod:`runs.execution.worker`)."""

from __future__ import annotations

import json
import threading
import uuid
from functools import cache

from pydantic import SecretStr

from accounts.models import UsagePurpose
from accounts.usage import quota_hold
from agents import versions
from agents.models import Agent
from agents.stores import DbMemoryStore, DbSkillStore, Guard
from context.stores import DbOverrideStore, overrides_from_json
from hango_project.config import hango
from hango_project.errors import QuotaExceeded
from hango_project.pgpool import release as release_connection
from harness.agent import AgentConfig, AgentSpec
from harness.chain import Chain
from harness.deltas import DeltaSink
from harness.deps import RunDeps, StackConfig
from harness.errors import ProviderAuthError, QuotaReached
from harness.loop import Loop
from harness.messages import Message as HMessage
from harness.providers import resolve_provider, split_model
from harness.providers.base import Provider, ProviderSettings, Unavailable
from harness.providers.budgeted import Budget, Budgeted
from harness.providers.counting import CountsOnce
from harness.providers.releasing import Releasing
from harness.providers.served_window import window_reported
from harness.stack import default_stack
from harness.state import State, state_from_json
from harness.stores import MemoryStore, Summary
from harness.tokens.base import Tokenizer
from harness.tokens.tokenizers import tokenizer_for
from harness.tools import ToolRegistry, builtin_registry
from runs.execution.call_ledger import DbLedger
from runs.execution.fence import Claim
from runs.execution.history import preloaded_history
from runs.execution.mcp_access import DbMcpAccess
from runs.execution.preload import NOTHING_PRELOADED, Preloaded
from runs.execution.session_memory import SessionMemoryStore
from runs.execution.store import store
from runs.execution.stores import DbCallJournal, DbFileStore, DbSummaryStore
from runs.live import relay
from runs.models import Run, Session, SessionKind


@cache
def tool_registry() -> ToolRegistry:
    return builtin_registry()


def provider_settings(*, timeout_seconds: float | None = None) -> ProviderSettings:
    """The adapters' settings from hango's; ``timeout_seconds`` overrides the per-call timeout
    (the inspector's try call has its own)."""
    knobs = hango()
    return ProviderSettings(
        anthropic_api_key=_revealed(knobs.anthropic_api_key),
        anthropic_base_url=knobs.anthropic_base_url,
        openai_api_key=_revealed(knobs.openai_api_key),
        openai_base_url=knobs.openai_base_url,
        timeout_seconds=timeout_seconds or knobs.provider_timeout_seconds,
        max_retries=knobs.provider_max_retries,
        scripted_delay_ms=knobs.scripted_delay_ms,
        scripted_word_delay_ms=knobs.scripted_word_delay_ms,
    )


def _revealed(secret: SecretStr | None) -> str | None:
    return secret.get_secret_value() if secret is not None else None


def agent_spec(agent: Agent) -> AgentSpec:
    """The agent as the harness sees it; its config is parsed here (a malformed one is a
    :class:`~harness.errors.ConfigurationError`, failing the run)."""
    allowed = None if agent.allowed_tools is None else tuple(agent.allowed_tools)
    config = _config_of(agent)
    # Asked of the model's server at most once a TTL per process (harness.providers.served_window).
    served = window_reported(agent.model, provider_settings(),
                             agent_window=config.model_settings.context_window)
    return AgentSpec(id=str(agent.id), name=agent.name, model=agent.model,
                     system_prompt=agent.system_prompt, allowed_tools=allowed, config=config,
                     default_max_turns=hango().default_max_turns, server_window=served)


# Parsed configs by their agent's content hash (agents.versions.content_hash: computed once,
# when the content is written): at most _CONFIGS_KEPT, the oldest forgotten first.
_configs: dict[str, AgentConfig] = {}
_CONFIGS_KEPT = 1024
_configs_lock = threading.Lock()


def _config_of(agent: Agent) -> AgentConfig:
    """The agent's config, parsed and checked against its schema once per content in a process
    (the check was ~3 % of a busy worker's CPU, run for every run of the same agent), keyed by
    the content hash its version stored when it was written: nothing is serialised again to
    find it. An AgentConfig never changes, so runs share it. One that fails is not kept: it
    fails again. An agent written without the services has no hash: parsed every time."""
    key = agent.content_hash
    if key and (found := _configs.get(key)) is not None:
        return found
    config = AgentConfig.from_json(json.dumps(agent.config or {}))
    if key:
        with _configs_lock:  # the runs' threads share it
            if len(_configs) >= _CONFIGS_KEPT:
                _configs.pop(next(iter(_configs)), None)
            _configs[key] = config
    return config


class DbBudget:
    """The tenant's quota as a run's (or a try's) model calls see it: each call's worst case is
    held (:func:`accounts.usage.quota_hold`) before it is sent. A run's call releases
    ``held`` with its usage row (:mod:`runs.execution.call_ledger`), and so does a try's."""

    def __init__(self, tenant_id: uuid.UUID, run_id: uuid.UUID | None = None) -> None:
        self.tenant_id, self.run_id = tenant_id, run_id
        self.held: list[int] = []

    def reserve(self, tokens: int) -> None:
        try:
            self.held.append(quota_hold(self.tenant_id, tokens, run_id=self.run_id))
        except QuotaExceeded as exc:
            raise QuotaReached(exc.message) from None


class ReadSummaryStore(DbSummaryStore):
    """The summary store of a session whose row the caller has just read (a run's claim reads
    it with the run): the first load answers from that row instead of reading it again. Only
    this store writes a session's summary, and a save forgets the row."""

    def __init__(self, session: Session, *, guard: Guard | None = None) -> None:
        super().__init__(session.pk, guard=guard)
        self._read: Session | None = session

    def load(self) -> Summary | None:
        session, self._read = self._read, None
        if session is None:
            return super().load()
        return (Summary(text=session.summary, through_seq=session.summary_seq)
                if session.summary_seq else None)

    def save(self, summary: Summary) -> None:
        self._read = None
        super().save(summary)


def build_loop(agent: Agent, session: Session, *, capture_only: bool = False,
               settings: ProviderSettings | None = None, claim: Claim | None = None,
               budget: Budget | None = None, preloaded: Preloaded | None = None,
               deltas: DeltaSink | None = None) -> Loop:
    """The loop a run of ``agent`` in ``session`` executes: the agent's chain over the run's
    stores, which write under the run's ``claim`` and first answer with what was
    ``preloaded``, its model calls held against ``budget``, the text they stream sent to
    ``deltas``.
    The one factory for runs and for the context inspector (``capture_only``: assemble
    requests, never call a model from a middleware), so what the inspector shows is what a run
    sends."""
    spec = agent_spec(agent)
    tokenizer = tokenizer_for(spec.model)
    provider, model = _provider(spec, settings, tokenizer, capture_only=capture_only,
                                budget=budget)
    guard = claim.hold if claim is not None else None
    reads = preloaded or NOTHING_PRELOADED
    knobs = hango()
    mcp = (DbMcpAccess(tenant_id=session.tenant_id, member_id=session.member_id,
                       uses=spec.config.mcp_servers) if spec.config.mcp_servers else None)
    deps = RunDeps(
        memory=_memory_store(agent, session, guard, reads),
        skills=DbSkillStore(agent, spec.config.skills),
        files=DbFileStore(session.pk, guard=guard, listing=reads.files),
        summaries=ReadSummaryStore(session, guard=guard),
        overrides=DbOverrideStore(session.tenant_id, agent.pk, session.pk,
                                  preloaded=reads.overrides,
                                  extra=overrides_from_json(session.overrides)),
        provider=provider, model=model, tools=tuple(tool_registry().all()),
        context_window=spec.settings.context_window, tokenizer=tokenizer,
        memory_max_bytes=knobs.memory_max_bytes,
        large_tool_result_chars=knobs.large_tool_result_chars,
        subagent_max_depth=knobs.subagent_max_depth,
        subagent_max_turns=knobs.subagent_max_turns,
        mcp=mcp, mcp_journal=DbCallJournal(claim) if claim is not None and mcp else None,
    )
    stack = default_stack(StackConfig(
        agent=spec, repeat_call_threshold=knobs.repeat_call_threshold, deps=deps,
        capture_only=capture_only))
    return Loop(agent=spec, chain=Chain.build(stack), provider=provider, model=model,
                tools=tool_registry().view(spec.allowed_tools), deltas=deltas,
                prints=tokenizer, purpose=_PURPOSES.get(session.kind, UsagePurpose.RUN.value))


def _memory_store(agent: Agent, session: Session, guard: Guard | None,
                  reads: Preloaded) -> MemoryStore:
    """The agent's memory; an eval session's own (its case's, never written to the agent)."""
    memory = DbMemoryStore(agent, guard=guard, preloaded=reads.memory)
    if session.kind != SessionKind.EVAL:
        return memory
    return SessionMemoryStore(session, agent_memory=memory, guard=guard,
                              max_files=hango().memory_max_files)


# The usage purpose of a session's run calls, by the session's kind.
_PURPOSES: dict[str, str] = {SessionKind.EVAL.value: UsagePurpose.EVAL.value}


def _provider(spec: AgentSpec, settings: ProviderSettings | None, tokenizer: Tokenizer, *,
              capture_only: bool, budget: Budget | None) -> tuple[Provider, str]:
    """The provider a run of ``spec`` calls, and the model it names, wrapped as
    :func:`build_loop` needs it."""
    provider: Provider
    try:
        provider, model = resolve_provider(spec.model, settings or provider_settings())
    except ProviderAuthError as exc:
        if not capture_only:
            raise
        # Assembling a request needs no key: the inspector works before one is configured.
        name, model = split_model(spec.model)
        provider = Unavailable(name=name, reason=str(exc))
    # The call goes out without the database connection: a run waiting on its model holds none.
    provider = Releasing(provider, release_connection)
    if budget is not None:
        provider = Budgeted(provider, budget, tokenizer)
    if capture_only:  # one inspection asks the provider's counter once per request it shows
        provider = CountsOnce(provider)
    return provider, model


def new_state(session: Session, history: list[HMessage], *, run_id: str = "") -> State:
    """The state a new run of ``session`` starts from: no checkpoint, the stored history."""
    return state_from_json({}, run_id=run_id, session_id=str(session.pk),
                           agent_id=str(session.agent_id), tenant_id=str(session.tenant_id),
                           messages=history, turn=0,
                           trace_content=session.tenant.trace_llm_content)


def build_execution(run: Run) -> tuple[Loop, State, int]:
    """The loop of a run as claimed (its stores write under that claim), the state restored
    from its last checkpoint, and the next message seq."""
    tenant = run.session.tenant
    budget = DbBudget(tenant.pk, run.pk) if tenant.token_quota is not None else None
    # The version the run recorded, whatever the agent became since (its checkpointer's too).
    run.agent = versions.executed(run.agent, run.agent_version)
    tokenizer = tokenizer_for(run.agent.model)
    reads = store().preload(tenant.pk, run.agent_id, run.session_id,
                            counts_key=tokenizer.counts_key)
    loop = build_loop(run.agent, run.session, claim=Claim(run.pk, run.epoch), budget=budget,
                      preloaded=reads, deltas=relay.run_deltas(run.pk))
    history = preloaded_history(reads, run.session_id, tokenizer)
    next_seq = (history[-1].seq or 0) + 1 if history else 1
    state = run_state(run, history)
    # Each model call's row is written as the call ends, whatever becomes of its turn.
    state.ledger = DbLedger(run, holds=None if budget is None else budget.held)
    return loop, state, next_seq


def run_state(run: Run, history: list[HMessage]) -> State:
    """The state of ``run`` at its last checkpoint (its todos, its middlewares' private state, a
    paused batch), over the session's stored ``history``: what the run resumes from."""
    return state_from_json(
        run.state_json,
        run_id=str(run.id), session_id=str(run.session_id), agent_id=str(run.agent_id),
        tenant_id=str(run.session.tenant_id), messages=history, turn=run.turn,
        trace_content=run.session.tenant.trace_llm_content,
    )
