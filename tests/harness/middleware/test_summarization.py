"""SummarizationMiddleware: triggering, the compacted request, reuse of the stored summary."""

from __future__ import annotations

from harness.history import is_summary, validate
from harness.messages import Message
from harness.providers.scripted import named_script
from harness.state import State
from harness.steps import FinalOutput
from harness.stores import Summary
from harness.tokens.base import ESTIMATE
from harness.tokens.counts import EncodingCounts
from tests.support.harness import run
from tests.support.summarization import (
    MemorySummaries,
    Recording,
    answers,
    make,
    purposes,
    reports,
    size,
    small,
    stored_history,
)

# -- triggering and the compacted request ------------------------------------------------------


def test_under_the_budget_nothing_changes():
    history = stored_history()
    provider = answers()
    loop = make(provider, options=small(size(history) + 1))
    _, state, recorder = run(loop, State(messages=list(history)))
    (sent,) = provider.requests
    assert sent.messages == tuple(history)
    assert purposes(recorder) == ["run"]
    (report,) = reports(loop)
    assert report.would_compact is False and report.summarized == 0


def test_over_trigger_tokens_older_messages_become_one_summary_and_the_last_are_kept():
    history = stored_history()
    budget = size(history) // 2
    provider, store = answers(), MemorySummaries()
    loop = make(provider, options=small(budget, keep_messages=4), store=store)
    step, state, recorder = run(loop, State(messages=list(history)))
    assert step == FinalOutput("end_turn")
    (sent,) = provider.run_requests
    summary, *kept = sent.messages
    assert is_summary(summary) and summary.role == "user" and summary.seq is None
    assert summary.text.startswith("Summary of the earlier conversation: The user said:")
    assert kept == history[-4:]  # the last call, its result, the answer, the question
    assert validate(sent.messages) == []
    assert ESTIMATE.request(sent) <= budget
    # The summary was made by a model call recorded with purpose "summarize", then stored.
    assert purposes(recorder) == ["summarize", "run"]
    assert store.saved == [Summary(text=summary.text.split(": ", 1)[1],
                                   through_seq=history[-5].seq)]
    # The working (stored) history is untouched; the summary lived in the request only.
    assert state.messages[:len(history)] == history
    (st,) = reports(loop)
    assert st.would_compact and st.summarized == len(history) - 4
    assert (st.summary_from_seq, st.summary_through_seq) == (1, history[-5].seq)
    assert st.tokens > budget >= st.tokens_after


def test_a_cut_between_a_call_and_its_results_keeps_them_together():
    history = stored_history()[:-2]  # ends with the last call's results
    provider = answers()
    run(make(provider, options=small(size(history) // 2, keep_messages=1)),
        State(messages=list(history)))
    (sent,) = provider.run_requests
    assert sent.messages[1:] == tuple(history[-2:])  # the call came along with its results
    assert validate(sent.messages) == []


def test_trigger_fraction_is_a_share_of_the_context_window():
    history = stored_history()
    full = size(history)
    for fraction, window, compacts in [(0.5, full + 400, True), (0.5, 2 * full + 2, False)]:
        provider = answers()
        run(make(provider, options={"trigger_fraction": fraction, "summary_max_tokens": 64},
                 window=window),
            State(messages=list(history)))
        assert is_summary(provider.run_requests[0].messages[0]) is compacts, (fraction, window)


def test_by_default_it_is_on_at_eight_tenths_of_the_window_keeping_six_messages():
    history = stored_history(60)
    full = size(history)
    provider = answers()
    run(make(provider, window=int(full / 0.8) - 20), State(messages=list(history)))
    assert is_summary(provider.run_requests[0].messages[0])
    assert provider.run_requests[0].messages[1:] == tuple(history[-6:])
    provider = answers()
    run(make(provider, window=int(full / 0.8) + 20), State(messages=list(history)))
    assert provider.run_requests[0].messages == tuple(history)


# -- reuse across runs ---------------------------------------------------------------------------


def test_the_next_run_extends_the_stored_summary_with_only_the_newer_messages():
    store = MemorySummaries()
    first = stored_history(10)
    budget = size(first) // 2
    options = small(budget, keep_messages=4)
    run(make(answers(), options=options, store=store), State(messages=list(first)))
    (stored,) = store.saved
    # The next run: the first run's answer was stored, then four more steps and a question.
    later = stored_history(14, question="One more thing?")
    provider = answers()
    _, state, recorder = run(make(provider, options=options, store=store),
                             State(messages=list(later)))
    (request,) = provider.summary_requests
    prompt = request.messages[0].text
    assert prompt.startswith(f"The summary so far:\n\n{stored.text}\n\nWhat happened after it:")
    transcript = prompt.split("What happened after it:", 1)[1]
    assert "payload 0 " not in transcript and "payload 3 " not in transcript  # summarized before
    assert "payload 9 " in transcript and "payload 11 " in transcript
    assert store.summary.through_seq == later[-5].seq > stored.through_seq
    assert purposes(recorder) == ["summarize", "run"]
    assert provider.run_requests[0].messages[1:] == tuple(later[-4:])


def test_a_cut_at_the_same_point_reuses_the_stored_summary_without_a_model_call():
    store = MemorySummaries()
    history = stored_history()
    options = small(size(history) // 2, keep_messages=4)
    run(make(answers(), options=options, store=store), State(messages=list(history)))
    provider = answers()
    _, _, recorder = run(make(provider, options=options, store=store),
                         State(messages=list(history)))
    assert provider.summary_requests == [] and purposes(recorder) == ["run"]
    assert provider.run_requests[0].messages[0].text.endswith(store.summary.text)
    assert len(store.saved) == 1


def test_within_a_run_the_summary_is_extended_turn_after_turn_and_requests_stay_in_budget():
    """A 300-turn run with a small budget: every request the model receives fits it."""
    provider = Recording(named_script("workload-300"))
    budget = 3_000
    loop = make(provider, options=small(budget, keep_messages=6), max_turns=400,
                tools=("echo", "write_todos"))
    step, state, _ = run(loop)
    assert step == FinalOutput("end_turn")
    assert state.messages[-1].text == "All 300 steps done."
    assert len(provider.run_requests) == 301
    sizes = [ESTIMATE.request(r) for r in provider.run_requests]
    assert max(sizes) <= budget
    assert all(validate(r.messages) == [] for r in provider.run_requests)
    first, *later = provider.summary_requests
    assert len(later) >= 10
    # Each later summary extends the previous one with the newly dropped messages only.
    for request in later:
        prompt = request.messages[0].text
        assert prompt.startswith("The summary so far:") and "step 0:" not in prompt
        assert ESTIMATE.request(request) < budget


def test_every_message_is_estimated_once_over_a_long_run(monkeypatch):
    computed: list[Message] = []  # kept alive, so no two of them share an id
    original = EncodingCounts._message
    monkeypatch.setattr(EncodingCounts, "_message",
                        lambda self, m: computed.append(m) or original(self, m))
    provider = Recording(named_script("workload-60"))
    _, state, _ = run(make(provider, options=small(1_500), tools=("echo", "write_todos")))
    # The summarizer's requests too: the scripted model counts whatever it is sent, and its
    # answers (their output tokens).
    sent = {id(m) for r in provider.requests for m in r.messages}
    answered = {id(a.message) for a in provider.answers}
    ids = [id(m) for m in computed]
    assert len(ids) == len(set(ids))  # never the same message twice
    # and only the run's own: what was sent or answered, or the history a summary stood in for
    assert set(ids) <= sent | answered | {id(m) for m in state.messages}
