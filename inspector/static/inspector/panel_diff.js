/* The Context panel's request diff (inspector/templates/inspector/panel_diff.html): the
 * session's next call, as saved, against one it sent before — GET .../context?against= — as a
 * badge on each part's row (added, removed, changed or same, with its token delta), the part
 * that breaks the earlier call's cached prefix marked, and the parts sent then but not now
 * listed apart. It keeps to its own elements: a row's badge sits in a span of its own, added
 * again whenever panel.js rebuilds the rows, and it loads again when the panel draws a newly
 * saved snapshot ("cp:saved" on the panel). Content is put into the page as text only. */
(function () {
  "use strict";

  const root = document.getElementById("context-panel");
  const card = document.getElementById("cp-diff");
  if (!root || !card) return;
  const $ = (id) => document.getElementById(id);
  const fmt = (n) => Number(n).toLocaleString("en-US");
  const signed = (n) => (n > 0 ? "+" : n < 0 ? "−" : "±") + fmt(Math.abs(n));
  const TITLES = {
    added: "Not sent by the earlier call.",
    removed: "Sent by the earlier call, not by the next one.",
    changed: "Sent both times, with other content.",
    same: "Sent both times as it was.",
  };
  let diff = null;  // the last diff the server answered
  let seq = 0;
  let sentCalls = false;  // whether a run of the session has made a model call, once seen
  const HEADERS = {"Accept": "application/json", "X-Hango-Tenant": root.dataset.tenant};

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
    for (const child of children) node.append(child);
    return node;
  }

  async function load() {
    const against = $("cp-diff-against").value.trim() || "last";
    const mine = ++seq;
    card.dataset.state = "loading";
    $("cp-diff-summary").textContent = "Comparing…";
    const response = await fetch(
      `${root.dataset.api}sessions/${root.dataset.session}/context?against=` +
      encodeURIComponent(against),
      {headers: HEADERS, credentials: "same-origin"});
    const body = await response.json().catch(() => null);
    if (mine !== seq) return;  // a later comparison is on its way
    if (!response.ok) {
      diff = null;
      card.dataset.state = "failed";
      $("cp-diff-summary").textContent = (body && body.error && body.error.message) ||
        `The server answered ${response.status}.`;
      $("cp-diff-summary").className = "cp-note cp-error";
      draw();
      return;
    }
    diff = body.diff;
    card.dataset.state = "settled";
    draw();
  }

  function draw() {
    const cut = diff && diff.cache_break;
    $("cp-diff-summary").className = "cp-note";
    const breakLine = $("cp-diff-break");
    breakLine.hidden = !cut;
    const removed = diff ? diff.parts.filter((p) => p.status === "removed") : [];
    $("cp-diff-removed").hidden = !removed.length;
    $("cp-diff-removed").querySelector("ul").replaceChildren(...removed.map((p) =>
      el("li", {"data-part": p.id, class: cut && cut.part === p.id ? "cp-diff-cut" : ""},
         p.id + " (" + signed(p.delta) + ")")));
    if (diff) {
      const counts = {added: 0, removed: 0, changed: 0, same: 0};
      for (const p of diff.parts) counts[p.status] += 1;
      const a = diff.against;
      $("cp-diff-summary").textContent =
        `Against run ${a.run}, turn ${a.turn}: ` +
        Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(", ") +
        `; ${fmt(diff.totals.before)} → ${fmt(diff.totals.after)} tokens ` +
        `(${signed(diff.totals.delta)}).`;
      breakLine.textContent = cut ? `${cut.part} (${cut.status}) breaks the earlier call's ` +
        `cached prefix of ${fmt(diff.cached_prefix.before)} tokens: the next call misses the ` +
        `prompt cache from there.` : "";
      $("cp-diff-cache").textContent = cacheText(a.call);
      if (!cut && diff.cached_prefix.before) {
        $("cp-diff-summary").textContent += ` The cached prefix (${fmt(diff.cached_prefix.before)}` +
          " tokens) is sent as it was.";
      }
    }
    $("cp-diff-cache").hidden = !diff;
    badges();
  }

  // What the prompt cache did for the earlier call, as the provider reported it, next to what
  // the inspector predicted when the call was sent.
  function cacheText(call) {
    const read = call.cache_read_ratio === null ? "The provider reported no input for that call"
      : `That call: the provider read ${fmt(call.cache_read_tokens)} tokens from its cache ` +
        `(${Math.round(call.cache_read_ratio * 100)}% of the input) and wrote ` +
        `${fmt(call.cache_write_tokens)}`;
    return `${read}; the inspector predicted ${fmt(call.predicted_cached_tokens)} cached.`;
  }

  function badges() {
    const byId = new Map(diff ? diff.parts.map((p) => [p.id, p]) : []);
    const cut = diff && diff.cache_break;
    for (const tr of root.querySelectorAll("tr[data-part]")) {
      let slot = tr.querySelector(".cp-diff");
      if (!slot) {
        const cell = tr.querySelector(".cp-id");
        if (!cell) continue;
        slot = el("div", {class: "cp-diff"});
        cell.append(slot);
      }
      const part = byId.get(tr.dataset.part);
      const marks = [];
      if (part) {
        const text = part.status === "same" ? "same" : `${part.status} ${signed(part.delta)}`;
        marks.push(el("span", {class: `cp-badge cp-diff-${part.status}`,
                               "data-status": part.status, title: TITLES[part.status]}, text));
      }
      if (cut && cut.part === tr.dataset.part) {
        marks.push(el("span", {class: "cp-badge cp-diff-break-badge", title:
          "The first part of the earlier call's cached prefix not sent as it was: the next " +
          "call reads nothing from the prompt cache from here on."}, "breaks the cache"));
      }
      slot.replaceChildren(...marks);
      tr.classList.toggle("cp-diff-cut", Boolean(cut && cut.part === tr.dataset.part));
    }
  }

  // A session none of whose runs has called a model has nothing to compare with: it is said
  // here, without asking for a comparison the server would refuse.
  async function hasSentCalls() {
    if (sentCalls) return true;
    const response = await fetch(`${root.dataset.api}sessions/${root.dataset.session}/runs` +
                                 "?limit=50", {headers: HEADERS, credentials: "same-origin"});
    if (!response.ok) return true;  // the comparison's own answer says what is wrong
    const body = await response.json();
    sentCalls = (body.results || []).some((run) => run.usage && run.usage.input_tokens +
      run.usage.cache_read_tokens + run.usage.cache_write_tokens > 0);
    return sentCalls;
  }

  async function follow() {
    if (await hasSentCalls()) return load();
    card.dataset.state = "none";
    $("cp-diff-summary").textContent = "The session has sent no model call yet: there is " +
      "nothing to compare the next one with.";
  }

  $("cp-diff-form").addEventListener("submit", (event) => { event.preventDefault(); load(); });
  root.addEventListener("cp:saved", follow);
  // panel.js builds the rows when its snapshot's parts change: each new row gets its badge.
  new MutationObserver((changes) => {
    if (changes.some((c) => [...c.addedNodes].some((n) => n.nodeName === "SECTION"))) badges();
  }).observe($("cp-groups"), {childList: true});
  // The first comparison comes with the panel's first snapshot, its first "cp:saved".
})();
