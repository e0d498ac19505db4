/* The admin's Context panel (inspector/panel.py): the context inspector's snapshot of a session's
 * next model request as three groups of parts with a checkbox each, a picture of the budget, and
 * Save / Try. It uses the public HTTP API only, with the admin's login session: the CSRF token
 * in X-CSRFToken, the session's tenant in X-Hango-Tenant. Save is one request that replaces the
 * agent's and the session's sets together (PUT .../context-overrides/both): both or neither.
 *
 * The selection (which parts are left out, which are replaced) lives here until Save. Totals move
 * at once from the parts' counts; the server's follow, debounced, from POST .../context, which
 * assembles the request with the selection in place of the saved overrides (pairs and framing
 * change them). Content from the session is only ever put into the page as text (textContent),
 * never as markup. The other scripts of the page follow its events ("context:snapshot",
 * "cp:saved"); panel_eval.js reads the selection through root.panel. */
(function () {
  "use strict";

  const root = document.getElementById("context-panel");
  if (!root) return;
  const API = root.dataset.api;
  const SESSION = root.dataset.session;
  const GROUPS = [["system", "System"], ["tools", "Tools"], ["messages", "Messages"]];
  const SEGMENTS = ["system", "tools", "messages", "framing"];
  const DEBOUNCE_MS = 300;
  const $ = (id) => document.getElementById(id);

  const state = {
    snapshot: null,              // the server's last snapshot (of the saved set or a preview)
    parts: new Map(),            // part id -> part of that snapshot
    saved: emptySet(),           // the stored overrides, agent's and session's
    sel: emptySet(),             // the selection Save would store
    rows: new Map(),             // part id -> its table row
    previewSeq: 0,
    previewTimer: 0,
    invalid: null,               // why the server would refuse the selection, or null
    busy: false,
    detail: null,                // the part shown in full: {id, part, own, sent, error}
  };

  function emptySet() { return {excluded: new Set(), replaced: new Map()}; }
  function copySet(s) { return {excluded: new Set(s.excluded), replaced: new Map(s.replaced)}; }

  function setOf(overrides) {
    const s = emptySet();
    for (const o of overrides) {
      if (o.action === "exclude") s.excluded.add(o.part); else s.replaced.set(o.part, o.replacement);
    }
    return s;
  }

  function overridesOf(s) {
    const out = [...s.excluded].sort().map((part) => ({part, action: "exclude"}));
    for (const [part, text] of [...s.replaced].sort()) {
      if (!s.excluded.has(part)) out.push({part, action: "replace", replacement: text});
    }
    return out;
  }

  const kindOf = (id) => id.startsWith("system:") ? "system" : id.startsWith("tool:") ? "tool"
    : id === "summary" ? "summary" : id.startsWith("message:") ? "message" : null;
  const groupOf = (id) => ({system: "system", tool: "tools"})[kindOf(id)] || "messages";
  const onAgent = (o) => ["system", "tool"].includes(kindOf(o.part));
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  const fmt = (n) => Number(n).toLocaleString("en-US");

  /* -- the API ------------------------------------------------------------------------------ */

  class ApiError extends Error {
    constructor(status, error) {
      super(error.message);
      this.status = status;
      this.code = error.code;
      this.detail = error.detail || {};
    }
  }

  async function api(method, path, body) {
    const headers = {"Accept": "application/json", "X-Hango-Tenant": root.dataset.tenant};
    const init = {method, headers, credentials: "same-origin"};
    if (method !== "GET") headers["X-CSRFToken"] = root.dataset.csrf;
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(API + path, init);
    const text = await response.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
    if (!response.ok) {
      throw new ApiError(response.status, (data && data.error) ||
        {code: "http_" + response.status, message: "The server answered " + response.status + "."});
    }
    return data;
  }

  function reasons(err) {
    const listed = err.detail && Array.isArray(err.detail.overrides) ? err.detail.overrides : [];
    return listed.length ? err.message + " " + listed.join(" ") : err.message;
  }

  function status(text, kind) {
    const line = $("cp-status");
    line.textContent = text;
    line.className = "cp-status" + (kind ? " cp-" + kind : "");
  }

  /* -- the selection ------------------------------------------------------------------------ */

  function partnersOf(id) {
    const seen = new Set([id]);
    const queue = [id];
    while (queue.length) {
      const part = state.parts.get(queue.pop());
      for (const other of part ? part.paired_with : []) {
        if (!seen.has(other)) { seen.add(other); queue.push(other); }
      }
    }
    seen.delete(id);
    return seen;
  }

  function leftWithPair() {  // part -> the excluded part it goes with
    const out = new Map();
    for (const id of state.sel.excluded) {
      for (const other of partnersOf(id)) if (!state.sel.excluded.has(other)) out.set(other, id);
    }
    return out;
  }

  function sent(part, pairs) {
    if (part.stale) return !state.sel.excluded.has(part.id) && !state.sel.replaced.has(part.id);
    if (part.summarized) return false;  // the summary is sent in its place
    if (!kindOf(part.id)) return part.included;  // made up for this request: not overridable
    return !state.sel.excluded.has(part.id) && !pairs.has(part.id);
  }

  function include(id) {
    for (const other of [id, ...partnersOf(id)]) state.sel.excluded.delete(other);
  }

  function drop(id) {
    state.sel.excluded.delete(id);
    state.sel.replaced.delete(id);
  }

  // What a set does to a part: EXCLUDED, its replacement text, or undefined (nothing).
  const EXCLUDED = Symbol("excluded");
  const choiceOf = (s, id) => s.excluded.has(id) ? EXCLUDED : s.replaced.get(id);

  function dirty() { return !same(overridesOf(state.sel), overridesOf(state.saved)); }

  function changed() {
    clearTimeout(state.previewTimer);
    const seq = ++state.previewSeq;
    root.dataset.state = "estimating";
    update();
    state.previewTimer = setTimeout(() => preview(seq), DEBOUNCE_MS);
  }

  async function preview(seq) {
    try {
      const snapshot = await api("POST", `sessions/${SESSION}/context`,
                                 {overrides: overridesOf(state.sel)});
      if (seq !== state.previewSeq) return;
      state.invalid = null;
      show(snapshot);
      root.dataset.state = "settled";
      status(dirty() ? "Unsaved selection: the totals are the server's for it." : "");
    } catch (err) {
      if (seq !== state.previewSeq) return;
      // The totals stay the panel's own estimate: the server has none for this selection.
      state.invalid = err.status === 422 ? reasons(err) : null;
      root.dataset.state = state.invalid ? "refused" : "failed";
      status(state.invalid ? "This selection would be refused: " + state.invalid
                           : "Could not check the selection: " + err.message, "error");
    }
    update();
  }

  /* -- drawing ------------------------------------------------------------------------------ */

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value !== null && value !== undefined && value !== false) node.setAttribute(name, value);
    }
    for (const child of children) {
      if (child !== null && child !== undefined) {
        node.append(typeof child === "string" ? document.createTextNode(child) : child);
      }
    }
    return node;
  }

  function allParts() {
    const s = state.snapshot;
    return s ? [...s.system, ...s.tools, ...s.messages] : [];
  }

  function show(snapshot) {
    const before = allParts().map((p) => p.id);
    state.snapshot = snapshot;
    state.parts = new Map(allParts().map((p) => [p.id, p]));
    if (!same(before, allParts().map((p) => p.id))) build();
    root.dispatchEvent(new CustomEvent("context:snapshot", {detail: snapshot}));  // cost.js, settings.js
  }

  // The part's cell holds its id, label and notes: a long id (a memory file's path) wraps there
  // instead of widening the table past its column.
  const COLUMNS = [["sent", "cp-sent"], ["part", "cp-id"], ["preview", "cp-preview"],
                   ["tokens", "cp-tokens"]];

  function build() {
    const groups = $("cp-groups");
    groups.replaceChildren();
    state.rows.clear();
    for (const [key, title] of GROUPS) {
      const body = el("tbody");
      for (const part of state.snapshot[key]) body.append(row(part));
      if (!state.snapshot[key].length) {
        body.append(el("tr", {}, el("td", {colspan: String(COLUMNS.length), class: "cp-empty"},
                                    "No parts.")));
      }
      const head = el("tr", {}, ...COLUMNS.map(([name, cls]) => el("th", {scope: "col", class: cls},
                                                                    name)));
      groups.append(el("section", {class: "cp-group", "data-group": key},
        el("h2", {}, title + " ", el("span", {class: "cp-group-total"})),
        el("table", {}, el("thead", {}, head), body)));
    }
  }

  function row(part) {
    const box = el("input", {type: "checkbox", "aria-label": "Send " + part.id});
    box.addEventListener("change", () => {
      if (!box.checked) state.sel.excluded.add(part.id);
      else if (state.parts.get(part.id).stale) drop(part.id);  // checking a stale one drops it
      else include(part.id);
      changed();
    });
    const open = el("button", {type: "button", class: "cp-open"}, ...breakable(part.id));
    open.addEventListener("click", () => openPart(part.id));
    const tr = el("tr", {"data-part": part.id, class: "cp-part"},
      el("td", {class: "cp-sent"}, box),
      el("td", {class: "cp-id"}, open, el("div", {class: "cp-label"}), el("div", {class: "cp-notes"})),
      el("td", {class: "cp-preview"}), el("td", {class: "cp-tokens"}));
    state.rows.set(part.id, tr);
    return tr;
  }

  function breakable(id) {  // the id as text, a line break allowed after each ":" and "/"
    return id.split(/(?<=[:/])/).flatMap((piece, i) => i ? [el("wbr"), piece] : [piece]);
  }

  function badge(text, title, kind) {
    return el("span", {class: "cp-badge" + (kind ? " cp-badge-" + kind : ""), title}, text);
  }

  function update() {
    if (!state.snapshot) return;
    const pairs = leftWithPair();
    const settled = root.dataset.state === "settled";
    const sums = {system: 0, tools: 0, messages: 0};
    const counts = {system: [0, 0, 0], tools: [0, 0, 0], messages: [0, 0, 0]};
    for (const part of allParts()) {
      const on = settled ? part.included : sent(part, pairs);
      const group = groupOf(part.id);
      if (on) sums[group] += part.tokens;
      counts[group][0] += on ? 1 : 0;
      counts[group][1] += 1;
      counts[group][2] += part.tokens;
      drawRow(part, sent(part, pairs), pairs);
    }
    for (const [key] of GROUPS) {
      const total = document.querySelector(`[data-group="${key}"] .cp-group-total`);
      total.textContent = `${fmt(sums[key])} of ${fmt(counts[key][2])} tokens · ` +
        `${counts[key][0]} of ${counts[key][1]} parts sent`;
      total.dataset.tokens = sums[key];
    }
    const s = state.snapshot;
    const framing = s.framing;
    const after = settled ? s.totals.after : sums.system + sums.tools + sums.messages + framing;
    const values = {...sums, framing, free: Math.max(0, s.context_window - after)};
    for (const [key, value] of Object.entries(values)) setTokens($("cp-sum-" + key), value);
    setTokens($("cp-total-before"), s.totals.before);
    setTokens($("cp-total-after"), after);
    setTokens($("cp-window"), s.context_window);
    $("cp-totals").classList.toggle("cp-estimating", !settled);
    drawBar($("cp-window-bar"), [...SEGMENTS, "free"], values, s.context_window);
    drawBar($("cp-request-bar"), SEGMENTS, values, Math.max(after, 1));
    drawFlags(s, after);
    const changes = dirty();
    $("cp-save").disabled = state.busy || !changes || Boolean(state.invalid);
    $("cp-revert").disabled = state.busy || !changes;
    $("cp-try-send").disabled = state.busy || Boolean(state.invalid);
    $("cp-dirty").textContent = changes ? "Unsaved changes." : "";
    drawDetail();
  }

  function setTokens(node, value) {
    node.textContent = fmt(value);
    node.dataset.tokens = value;
  }

  function drawRow(part, on, pairs) {
    const tr = state.rows.get(part.id);
    if (!tr) return;
    const box = tr.querySelector("input");
    box.checked = on;
    box.disabled = state.busy || (!kindOf(part.id) && !part.stale);
    tr.classList.toggle("cp-off", !on);
    tr.querySelector(".cp-label").textContent = part.label;
    tr.querySelector(".cp-preview").textContent = part.preview;
    setTokens(tr.querySelector(".cp-tokens"), part.tokens);
    const notes = [];
    const replaced = state.sel.replaced.has(part.id) && !state.sel.excluded.has(part.id);
    if (part.stale) {
      notes.push(badge("stale override", "An override for a part that is not in the request: " +
                       "kept, doing nothing until the part returns. Check it to drop it.", "warn"));
    }
    if (replaced) notes.push(badge("replaced", "Sent with the replacement text."));
    if (pairs.has(part.id)) {
      notes.push(badge("left out with " + pairs.get(part.id), "A batch's tool calls and their " +
                       "results are sent or left out together.", "pair"));
    } else if (part.paired_with.length) {
      notes.push(badge("pair: " + part.paired_with.join(", "), "Sent or left out together " +
                       "with its pair.", "pair"));
    }
    if (part.summarized) {
      notes.push(badge("summarized", "The compacted call sends the summary part in place of " +
                       "this message.", "warn"));
    }
    for (const image of part.images || []) {
      notes.push(badge(image.line, image.sent ? "An image of a tool result, counted by " +
                       "Anthropic's rule (about width × height / 750 tokens)." : "Sent as a " +
                       "line of text: this model's API takes no images in tool results."));
    }
    if (part.cached_prefix) {
      notes.push(badge("cached prefix", "Before the prompt cache's breakpoint: leaving it out " +
                       "or changing it misses the cache on the next call.", "cache"));
    }
    // Where the tokenizer counts the texts, the parts it could not count as they are sent.
    if (part.tokens && state.snapshot.tokenizer !== "estimate") {
      if (part.counted === "rule") {
        notes.push(badge("counted by rule", "Counted by the provider's published rule for " +
                         "how it renders this part, not from its JSON."));
      } else if (part.counted === "estimate") {
        notes.push(badge("estimated", "The provider renders this part in a form no offline " +
                         "tokenizer knows: the count is the tokenizer's over its JSON."));
      }
    }
    if (!kindOf(part.id) && !part.stale) notes.push(badge("made up for this request", null));
    const was = choiceOf(state.saved, part.id);
    const now = choiceOf(state.sel, part.id);
    if (was !== now) notes.push(badge("unsaved", "Changed since the last save.", "dirty"));
    tr.classList.toggle("cp-changed", was !== now);
    tr.querySelector(".cp-notes").replaceChildren(...notes);
  }

  function drawBar(bar, keys, values, whole) {
    bar.replaceChildren(...keys.filter((key) => values[key] > 0).map((key) => {
      const segment = el("span", {class: "cp-seg cp-" + key, "data-segment": key,
                                  title: `${key}: ${fmt(values[key])} tokens`});
      segment.style.width = Math.min(100, (100 * values[key]) / whole) + "%";
      return segment;
    }));
    bar.setAttribute("aria-label", keys.map((key) => `${key} ${fmt(values[key])}`).join(", ") +
                     ` of ${fmt(whole)} tokens`);
  }

  function drawFlags(s, after) {
    const flags = [badge("counted: " + (s.counted === "estimate" ? "estimate" :
      s.counted + " (" + s.tokenizer + ")"), "How the tokens were counted.")];
    if (s.would_compact) {
      const pending = s.compaction && s.compaction.summary_pending;
      flags.push(badge("would compact", "The next call is compacted first: the summary part " +
                       "stands for the messages marked summarized" + (pending ? "; it is made " +
                       "when the call is sent, up to " + fmt(s.compaction.summary_max_tokens) +
                       " tokens, so its text is not known yet." : ", the stored summary sent " +
                       "as it is."), "warn"));
    }
    if (s.would_fail) {
      flags.push(badge("a run would fail here", s.would_fail, "warn"));
    }
    if (after > s.context_window) {
      flags.push(badge(`over the window by ${fmt(after - s.context_window)}`, null, "warn"));
    }
    if (s.overrides.stale.length) {
      flags.push(badge(`${s.overrides.stale.length} stale override(s)`,
                       s.overrides.stale.join(", "), "warn"));
    }
    flags.push(...runFlags(s));
    $("cp-flags").replaceChildren(...flags);
  }

  const OUTLOOKS = {ran: "ran before the pause", answered: "answered by its decision",
                    will_run: "runs when the batch finishes", offloaded: "goes to a file",
                    awaiting_decision: "waiting for a decision"};

  function runFlags(s) {  // whose call this is, a paused batch, the messages queued behind
    const flags = [];
    if (s.run) {
      flags.push(badge(`run ${s.run.status}, turn ${s.run.turn}`, "The next call of the " +
                       "session's active run " + s.run.id + ", from its last checkpoint.",
                       s.run.status === "awaiting_approval" ? "warn" : null));
    }
    const unknown = s.pending_calls.filter((c) => c.outlook !== "ran" && c.outlook !== "answered");
    if (s.pending_calls.length) {
      flags.push(badge(`paused batch: ${unknown.length} of ${s.pending_calls.length} results ` +
                       "not known yet", s.batch_part + " holds them: " + s.pending_calls.map(
                         (c) => `${c.name} ${c.tool_use_id}: ${OUTLOOKS[c.outlook]}`).join("; "),
                       unknown.length ? "warn" : null));
    }
    if (s.queued.length) {
      flags.push(badge(`${s.queued.length} queued message(s), not in this request`,
                       s.queued.map((p) => p.preview).join(" / ")));
    }
    return flags;
  }

  /* -- a part in full, and editing it ------------------------------------------------------- */

  function textOf(part, content) {
    if (part.kind === "system") return content;
    try {
      return JSON.parse(content).filter((b) => b.type === "text").map((b) => b.text).join("\n\n");
    } catch (e) {
      return content;
    }
  }

  function pretty(part, content) {
    if (part.kind === "system") return content;
    try { return JSON.stringify(JSON.parse(content), null, 2); } catch (e) { return content; }
  }

  // A message's content blocks with ``text`` in place of its text, as the server replaces it
  // (harness.context.replace_text): one text block where the first was, every tool block kept.
  function withText(part, content, text) {
    if (part.kind === "system") return text;
    let blocks = null;
    try { blocks = JSON.parse(content); } catch (e) { blocks = null; }
    if (!Array.isArray(blocks)) return text;
    const out = [];
    let placed = false;
    for (const block of blocks) {
      if (block.type !== "text") out.push(block);
      else if (!placed) { out.push({type: "text", text}); placed = true; }
    }
    if (!placed) out.push({type: "text", text});
    return JSON.stringify(out);
  }

  function openPart(id) {
    state.detail = {id, part: state.parts.get(id), own: null, sent: null, error: null};
    $("cp-detail").hidden = false;
    $("cp-editor").hidden = true;
    drawDetail();
    reveal();
    if (!state.detail.part.stale) loadPart(id).then(reveal);  // and again, grown to its content
  }

  function reveal() {
    // The side column stays in view as the parts scroll by; below them (a narrow window), the
    // page is brought to the card.
    $("cp-detail").scrollIntoView({block: "nearest"});
  }

  async function loadPart(id) {
    try {
      const full = await api("GET", `sessions/${SESSION}/context?full=${encodeURIComponent(id)}`);
      if (!state.detail || state.detail.id !== id) return;
      // Its own content (before a saved replacement) and what the next call sends.
      state.detail.own = full.original !== undefined ? full.original : full.content;
      state.detail.sent = full.content;
    } catch (err) {
      if (!state.detail || state.detail.id !== id) return;
      state.detail.error = err.message;
    }
    drawDetail();
  }

  function drawDetail() {
    const d = state.detail;
    if (!d) return;
    const [note, shown, before] = detailView(d);
    $("cp-detail-title").textContent = `${d.id} — ${d.part.label}`;
    $("cp-detail-note").textContent = note;
    setText($("cp-detail-content"), shown);
    $("cp-detail-original").hidden = before === null;
    setText($("cp-detail-original").querySelector("pre"), before || "");
    const kind = kindOf(d.id);
    $("cp-edit").hidden = !["system", "message", "summary"].includes(kind) || d.part.stale;
    $("cp-edit").disabled = d.own === null;
  }

  function setText(node, text) {  // a long part is not laid out again on every change
    if (node.textContent !== text) node.textContent = text;
  }

  function detailView(d) {  // [note, the content shown, the content before its replacement]
    if (d.part.stale) return ["This override's part is not in the request.", "", null];
    if (d.error) return ["", "Could not load it: " + d.error, null];
    if (d.own === null) return ["", "Loading…", null];
    const now = choiceOf(state.sel, d.id);
    const was = choiceOf(state.saved, d.id);
    const unsaved = now !== was;
    const notes = kindOf(d.id) === "tool" ? ["A tool can only be left out: a changed " +
                                             "definition would no longer match its checks."] : [];
    if (now === EXCLUDED) {
      notes.push(unsaved ? "Left out by the selection: Save stores it." :
                 "Left out of the next call by the saved overrides.");
      return [notes.join(" "), pretty(d.part, d.own), null];
    }
    if (typeof now === "string") {
      notes.push(unsaved ? "Your replacement, not saved yet: Save stores it." :
                 "As the next call sends it, with the saved replacement.");
      const sent = !unsaved && d.sent !== null ? d.sent : withText(d.part, d.own, now);
      return [notes.join(" "), pretty(d.part, sent), pretty(d.part, d.own)];
    }
    notes.push(unsaved ? "The original: the replacement is taken out of the selection, and " +
               "Save stores that." : "As the next call sends it, with the saved overrides.");
    return [notes.join(" "), pretty(d.part, d.own), null];
  }

  function closePart() {
    $("cp-detail").hidden = true;
    state.detail = null;
  }

  function startEdit() {
    const {id, part, own} = state.detail;
    $("cp-editor").hidden = false;
    $("cp-edit-text").value = state.sel.replaced.has(id) ? state.sel.replaced.get(id)
                                                         : textOf(part, own);
    $("cp-edit-text").focus();
  }

  function applyEdit(keep) {
    const {id} = state.detail;
    if (keep) state.sel.replaced.delete(id); else state.sel.replaced.set(id, $("cp-edit-text").value);
    include(id);
    $("cp-editor").hidden = true;
    changed();  // the card shows the selection's text from now on
  }

  /* -- save and try ------------------------------------------------------------------------- */

  async function save() {
    // Only the sets that changed: the agent's is every session's of the agent, and writing it
    // back as this page read it would undo a change made elsewhere meanwhile.
    const chosen = overridesOf(state.sel), stored = overridesOf(state.saved);
    const body = {};
    for (const [name, on] of [["agent", onAgent], ["session", (o) => !onAgent(o)]]) {
      if (!same(chosen.filter(on), stored.filter(on))) body[name] = chosen.filter(on);
    }
    busy(true, "Saving…");
    let sets = null;
    try {
      sets = await api("PUT", `sessions/${SESSION}/context-overrides/both`, body);
    } catch (err) {  // neither set was saved: the selection stays, checked again
      busy(false, "Not saved: " + reasons(err), "error");
      await reload(true).catch(() => undefined);
      return;
    }
    adopt(sets, false);
    const written = Object.keys(body).map((name) =>
      `the ${name}'s overrides (${sets[name].overrides.length})`);
    savedNote(`Saved ${written.join(" and ")}.`, sets.session.added);
    try {
      draw(await api("GET", `sessions/${SESSION}/context`));
      busy(false, "");
    } catch (err) {
      busy(false, "Saved, but the snapshot could not be read again: " + err.message, "error");
    }
  }

  function savedNote(text, added) {
    const box = $("cp-saved");
    box.replaceChildren(el("p", {}, text));
    if (added.length) {
      box.append(el("p", {}, "Added as pairs (a batch's calls and results go together):"),
                 el("ul", {id: "cp-added"},
                    ...added.map((id) => el("li", {"data-part": id}, id))));
    }
  }

  // The selection as a try and an eval run take it, {exclude, replace} (the server reads it with
  // inspector.tries.try_overrides): the one conversion both use. `only` keeps some parts: an
  // eval run's sessions hold none of this session's messages.
  function selectionBody(only = () => true) {
    const body = {exclude: [...state.sel.excluded].filter(only).sort(), replace: {}};
    for (const [id, text] of [...state.sel.replaced].sort()) {
      if (!state.sel.excluded.has(id) && only(id)) body.replace[id] = text;
    }
    return body;
  }

  // The saved overrides the selection takes back, which the server applies all the same: a try
  // or an eval run goes on top of the stored overrides, it cannot undo one.
  function takenBack(only = () => true) {
    return overridesOf(state.saved).map((o) => o.part).filter((id) => only(id) &&
      !state.sel.excluded.has(id) && !state.sel.replaced.has(id));
  }

  async function tryIt() {
    const body = selectionBody();
    const message = $("cp-try-message").value;
    if (message.trim()) body.message = message;
    const back = takenBack();
    $("cp-try-note").textContent = back.length ? "Try applies the saved overrides too: save " +
      "first to try without " + back.join(", ") + "." : "";
    busy(true, "Trying: one real model call…");
    try {
      answer(await api("POST", `sessions/${SESSION}/context/try`, body));
      busy(false, "");
    } catch (err) {
      busy(false, "The try failed: " + reasons(err), "error");
    }
  }

  function answer(tried) {
    const box = $("cp-answer");
    const blocks = tried.message.content.map((block) => block.type === "text"
      ? el("p", {class: "cp-answer-text"}, block.text)
      : block.type === "tool_use"
      ? el("div", {class: "cp-tool-call"}, el("strong", {}, "tool call: " + block.name),
           el("pre", {class: "cp-content"}, JSON.stringify(block.input, null, 2)))
      : el("pre", {class: "cp-content"}, JSON.stringify(block, null, 2)));
    const usage = el("table", {id: "cp-usage"}, ...Object.entries(tried.usage).map(([k, v]) =>
      el("tr", {}, el("th", {scope: "row"}, k.replace(/_/g, " ")), el("td", {}, fmt(v)))));
    box.replaceChildren(el("h3", {}, "The answer"),
      el("p", {class: "cp-note"}, `stop reason: ${tried.stop_reason} · nothing was added to ` +
         "the session; tool calls are shown, not run"), ...blocks, usage);
    box.hidden = false;
  }

  function busy(on, text, kind) {
    state.busy = on;
    status(text, kind);
    update();
  }

  /* -- loading ------------------------------------------------------------------------------ */

  function adopt(sets, keepSelection) {  // the saved sets, as the server answered them
    state.saved = setOf([...sets.agent.overrides, ...sets.session.overrides]);
    if (keepSelection) return;
    clearTimeout(state.previewTimer);
    state.previewSeq += 1;  // a preview still on its way is of a selection now saved
    state.sel = copySet(state.saved);
    if (state.detail) state.detail.sent = null;  // read again below, with the saved set
  }

  function draw(snapshot) {  // the snapshot of the saved sets, drawn in place
    show(snapshot);
    root.dataset.state = "settled";
    update();
    root.dispatchEvent(new CustomEvent("cp:saved"));  // what compares the saved call follows
    if (!state.detail) return;
    if (!state.parts.has(state.detail.id)) return closePart();
    state.detail.part = state.parts.get(state.detail.id);
    loadPart(state.detail.id);  // what the card shows may have changed with the save
  }

  async function reload(keepSelection) {
    const both = api("GET", `sessions/${SESSION}/context-overrides/both`);
    if (keepSelection) {
      adopt(await both, true);
      changed();
      return;
    }
    const [sets, snapshot] = await Promise.all([both, api("GET", `sessions/${SESSION}/context`)]);
    adopt(sets, false);
    draw(snapshot);
  }

  // What panel_eval.js reads of the panel: the API as the panel calls it, and the selection.
  root.panel = {
    api, selection: selectionBody, takenBack, onAgent: (id) => onAgent({part: id}),
    refusal: () => state.invalid, busy: () => state.busy || !state.snapshot,
  };

  $("cp-save").addEventListener("click", save);
  $("cp-revert").addEventListener("click", () => { state.sel = copySet(state.saved); changed(); });
  $("cp-try-send").addEventListener("click", tryIt);
  $("cp-edit").addEventListener("click", startEdit);
  $("cp-edit-apply").addEventListener("click", () => applyEdit(false));
  $("cp-edit-drop").addEventListener("click", () => applyEdit(true));
  $("cp-detail-close").addEventListener("click", closePart);
  // The side column sticks below the Save bar (panel.css), which grows when a note shows in it.
  const bar = root.querySelector(".cp-actions");
  new ResizeObserver(() => root.style.setProperty("--cp-actions-height", `${bar.offsetHeight}px`))
    .observe(bar);

  reload().then(() => status(""), (err) => {
    root.dataset.state = "failed";
    status(err.status === 404 ? "This session is not visible to you through the API." :
           "Could not load the snapshot: " + err.message, "error");
  });
})();
