/* The next call's cost in the Context panel (inspector/templates/inspector/cost.html): drawn
 * from the `cost` of each snapshot panel.js shows (its "context:snapshot" event), the saved
 * selection's or a preview's. Amounts are the API's decimal text, put in as text. */
(function () {
  "use strict";

  const root = document.getElementById("context-panel");
  if (!root) return;
  const $ = (id) => document.getElementById(id);

  function amount(text, currency) { return `${text} ${currency}`; }

  function draw(cost) {
    const range = $("cp-cost-range");
    const note = $("cp-cost-note");
    if (!cost) {
      range.hidden = true;
      note.textContent = "The agent's model has no known price: its cost is not shown. " +
                         "An owner or admin may set the tenant's price for it (PUT /v1/prices).";
      return;
    }
    range.hidden = false;
    $("cp-cost-likely").textContent = amount(cost.likely, cost.currency);
    $("cp-cost-all").textContent = amount(cost.all_cached, cost.currency);
    $("cp-cost-none").textContent = amount(cost.none_cached, cost.currency);
    $("cp-cost-output").textContent = `${amount(cost.output_rate, cost.currency)} / M tokens`;
    const share = cost.read_share === null ? "no calls yet, so a miss"
      : `${(cost.read_share * 100).toFixed(1)}% of the session's input read from the cache`;
    note.textContent = `${cost.input_tokens.toLocaleString()} input tokens, ` +
      `${cost.cached_prefix_tokens.toLocaleString()} of them the cache prefix; likely: ` +
      `${share}. Price: ${cost.source}. The answer's output is priced once written.`;
  }

  root.addEventListener("context:snapshot", (event) => draw(event.detail.cost));
})();
