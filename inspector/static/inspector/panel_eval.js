/* The Context panel's "Evaluate this selection" (inspector/templates/inspector/panel_eval.html):
 * one of the tenant's eval suites (GET /v1/eval-suites) run against the session's agent twice,
 * at once — with the panel's selection as the eval run's unsaved overrides, and without it, the
 * baseline — both on the same agent version (POST /v1/eval-runs). It follows both (GET
 * /v1/eval-runs/{id}: N of M cases done), then shows each case's verdict with its failing
 * graders' reasons, tokens, cost, latency and a link to its run, the totals, and the comparison
 * (GET /v1/eval-runs/{base}/compare/{head}: cases regressed and fixed, the deltas).
 *
 * A fresh baseline, not an earlier eval run's: the agent's stored overrides, memory files and
 * skills change apart from its versions, and a suite's cases change too, so only a baseline run
 * beside the selection's compares the selection alone. The selection is panel.js's own
 * (root.panel.selection, the conversion Try uses), its system and tool parts only: a case's
 * session holds none of this session's messages. Nothing is saved: the session, the agent and
 * their overrides stay as they are. Content is put into the page as text only. */
(function () {
  "use strict";

  const root = document.getElementById("context-panel");
  const card = document.getElementById("cp-eval");
  if (!root || !card || !root.panel) return;
  const panel = root.panel;
  const $ = (id) => document.getElementById(id);
  const fmt = (n) => Number(n).toLocaleString("en-US");
  const signed = (n) => (n > 0 ? "+" : n < 0 ? "−" : "±") + fmt(Math.abs(n));
  const POLL_MS = 1000;
  const following = {head: null, base: null, cancelled: false};

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
    for (const child of children) node.append(child);
    return node;
  }

  function say(text, kind) {
    $("cp-eval-status").textContent = text;
    $("cp-eval-status").className = "cp-status" + (kind ? " cp-" + kind : "");
  }

  function state(name) {
    card.dataset.state = name;
    const running = name === "running";
    $("cp-eval-start").disabled = running || !$("cp-eval-suite").value;
    $("cp-eval-suite").disabled = running || !$("cp-eval-suite").options.length ||
      !$("cp-eval-suite").value;
    $("cp-eval-cancel").hidden = !running;
  }

  /* -- the suites --------------------------------------------------------------------------- */

  async function suites() {
    const found = [];
    let query = "?limit=100";
    while (query !== null) {
      const page = await panel.api("GET", "eval-suites" + query);
      found.push(...page.results);
      query = page.next ? page.next.slice(page.next.indexOf("?")) : null;
    }
    return found;
  }

  async function loadSuites() {
    const select = $("cp-eval-suite");
    try {
      const found = await suites();
      select.replaceChildren(...found.map((s) => el("option", {value: s.id},
        `${s.name} (${s.case_count} case${s.case_count === 1 ? "" : "s"})`)));
      if (!found.length) {
        select.replaceChildren(el("option", {value: ""}, "No eval suites"));
        say("The tenant has no eval suites yet: make one (POST /v1/eval-suites, or the admin's " +
            "Eval suites) with a few cases, then evaluate the selection with it.", "error");
      }
    } catch (err) {
      select.replaceChildren(el("option", {value: ""}, "No eval suites"));
      say("Could not list the eval suites: " + err.message, "error");
    }
    state("idle");
  }

  /* -- starting and following ----------------------------------------------------------------- */

  function overrides() {
    const body = panel.selection(panel.onAgent);
    const all = panel.selection();
    const dropped = [...all.exclude, ...Object.keys(all.replace)].filter((id) => !panel.onAgent(id));
    const back = panel.takenBack(panel.onAgent);
    const notes = [];
    if (dropped.length) {
      notes.push("Not carried to the cases (each has a conversation of its own): " +
                 dropped.join(", ") + ".");
    }
    if (back.length) {
      notes.push("The agent's saved overrides apply too: save first to evaluate without " +
                 back.join(", ") + ".");
    }
    $("cp-eval-note").textContent = notes.join(" ");
    return body;
  }

  async function evaluate() {
    if (panel.busy()) return say("The panel is busy: evaluate once it is done.", "error");
    if (panel.refusal()) return say("This selection would be refused: " + panel.refusal(), "error");
    const body = overrides();
    const empty = !body.exclude.length && !Object.keys(body.replace).length;
    Object.assign(following, {head: null, base: null, cancelled: false});
    $("cp-eval-results").hidden = true;
    state("running");
    say("Starting the eval run…");
    try {
      const session = await panel.api("GET", `sessions/${root.dataset.session}`);
      const run = {suite: $("cp-eval-suite").value, agent: session.agent,
                   version: session.agent_version};
      following.head = await panel.api("POST", "eval-runs", {...run, overrides: body});
      if (!empty) {  // the baseline: the same suite on the same version, without the selection
        following.base = await panel.api("POST", "eval-runs",
                                         {...run, version: following.head.version});
      }
    } catch (err) {
      // The selection's eval run goes on without its baseline; without it, nothing runs.
      say((following.head ? "The baseline was not started: " : "Not evaluated: ") +
          err.message, "error");
      if (!following.head) return state("idle");
    }
    await follow(empty);
  }

  const done = (run) => !run || run.status !== "running";
  const progress = (run) => `${run.summary.cases - run.summary.running} of ` +
    `${run.summary.cases} cases done`;

  async function follow(empty) {
    const refusedBase = !following.base && !empty;
    const seen = $("cp-eval-status").textContent;
    try {
      while (!done(following.head) || !done(following.base)) {
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        const [head, base] = await Promise.all([following.head, following.base].map((run) =>
          run && !done(run) ? panel.api("GET", `eval-runs/${run.id}`) : Promise.resolve(run)));
        Object.assign(following, {head, base});
        say(`Evaluating: with the selection ${progress(head)}` +
            (base ? `; the baseline ${progress(base)}` : "") + ".");
      }
      const compared = following.base ? await panel.api(
        "GET", `eval-runs/${following.base.id}/compare/${following.head.id}`) : null;
      draw(following.head, compared, empty);
      say(refusedBase ? seen : `Done: with the selection ${progress(following.head)}` +
          (following.base ? `; the baseline ${progress(following.base)}` : "") +
          (following.cancelled ? " (cancelled)." : "."), refusedBase ? "error" : null);
    } catch (err) {
      say(`Could not follow eval run ${following.head.id}: ${err.message}`, "error");
    }
    state("done");
  }

  async function cancel() {
    following.cancelled = true;
    for (const run of [following.head, following.base]) {
      if (run && !done(run)) {
        await panel.api("POST", `eval-runs/${run.id}/cancel`).catch(() => undefined);  // ended
      }
    }
  }

  /* -- the results ---------------------------------------------------------------------------- */

  function cost(value) {
    const lines = (value && value.by_currency) || [];
    const priced = lines.map((line) => `${line.total} ${line.currency}`).join(" + ");
    const unpriced = value && value.unpriced_calls ? `${value.unpriced_calls} calls unpriced` : "";
    return [priced, unpriced].filter(Boolean).join(" · ") || "no cost";
  }

  function caseItem(result) {
    const failing = result.verdicts.filter((v) => !v.passed);
    const link = result.run ? el("a", {href: root.dataset.runPage.replace("RUN", result.run),
                                       class: "cp-eval-run"}, "its run") : "no run";
    return el("li", {"data-case": result.case_name, "data-status": result.status},
      el("strong", {}, result.case_name), " ",
      el("span", {class: `cp-badge cp-eval-${result.status}`}, result.status),
      ...failing.map((v) => el("div", {class: "cp-eval-reason"}, `${v.grader}: ${v.reason}`)),
      el("div", {class: "cp-note"},
         `${fmt(result.input_tokens + result.output_tokens)} tokens · ${cost(result.cost)} · ` +
         (result.latency_ms === null ? "no latency" : `${fmt(result.latency_ms)} ms`) + " · ",
         link));
  }

  function summaryText(s) {
    const rate = s.pass_rate === null ? "no pass rate" : `pass rate ${Math.round(s.pass_rate * 100)}%`;
    const costs = Object.entries(s.cost).map(([c, v]) => `${v} ${c}`).join(" + ");
    return `${rate} (${s.passed} of ${s.cases} passed, ${s.failed} failed, ${s.error} errors) · ` +
      `${fmt(s.input_tokens + s.output_tokens)} tokens · ` +
      `${costs || "no cost"}${s.unpriced_calls ? ` (${s.unpriced_calls} calls unpriced)` : ""} · ` +
      `${fmt(s.latency_ms.total)} ms in all`;
  }

  function changes(kind, cases) {
    return el("li", {"data-change": kind}, `${kind}: `, cases.length
      ? cases.map((c) => `${c.name} (${c.base} → ${c.head})`).join(", ") : "none");
  }

  function comparison(c) {
    const rate = (v) => v === null ? "–" : `${Math.round(v * 100)}%`;
    const costs = Object.entries(c.cost).map(([currency, v]) =>
      `cost ${v.base} → ${v.head} ${currency} (${v.delta.startsWith("-") ? "" : "+"}${v.delta})`);
    return [
      el("p", {class: "cp-note"}, `The baseline is eval run ${c.base}: the same suite on the ` +
         "same agent version, without the selection, run beside it."),
      el("ul", {id: "cp-eval-changes"}, changes("regressed", c.regressed),
         changes("fixed", c.fixed)),
      el("p", {id: "cp-eval-deltas"}, [
        `pass rate ${rate(c.pass_rate.base)} → ${rate(c.pass_rate.head)}`,
        `tokens ${signed(c.tokens.delta)}`, ...costs,
        `latency ${signed(c.latency_ms.delta)} ms`].join(" · ")),
      ...(c.only_in_base.length || c.only_in_head.length ? [el("p", {class: "cp-note"},
        "Cases only one of them ran: " + [...c.only_in_base, ...c.only_in_head].join(", "))]
        : []),
    ];
  }

  function draw(head, compared, empty) {
    $("cp-eval-summary").textContent = summaryText(head.summary);
    $("cp-eval-cases").replaceChildren(...head.results.map(caseItem));
    $("cp-eval-compare").replaceChildren(...(compared ? comparison(compared) : [
      el("p", {class: "cp-note"}, empty ? "The selection changes no system or tool part: " +
         "this is the agent as it is, with nothing to compare." : "No baseline to compare with.")]));
    $("cp-eval-results").hidden = false;
  }

  $("cp-eval-start").addEventListener("click", evaluate);
  $("cp-eval-cancel").addEventListener("click", cancel);
  loadSuites();
})();
