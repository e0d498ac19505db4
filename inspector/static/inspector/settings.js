/* The model settings in the Context panel (inspector/templates/inspector/settings.html): drawn
 * from the `model_settings` of each snapshot panel.js shows (its "context:snapshot" event), each
 * effective value with where it came from. Values are put in as text. */
(function () {
  "use strict";

  const root = document.getElementById("context-panel");
  if (!root) return;
  const $ = (id) => document.getElementById(id);

  // Where a value comes from (the snapshot's *_source); a setting the agent does not set is
  // not sent, and the model's server decides.
  const SOURCES = {
    agent: "agent: its config sets it",
    model_table: "model_table: hango's table of known models",
    server: "server: the model's server reports it",
    default: "default: hango's, a guess for a model it does not know (set it)",
  };
  const OUTPUT_DEFAULT = "default: hango's 4,096, within the model's maximum and half its window";
  const NOT_SENT = "default: not sent, the server decides";
  const SENT_IF_SET = ["temperature", "top_p", "stop", "tool_choice", "parallel_tool_calls",
                       "reasoning_effort"];

  function rows(s) {
    const out = [
      ["context_window", `${s.context_window.toLocaleString("en")} tokens`,
       SOURCES[s.context_window_source] || s.context_window_source,
       s.context_window_source === "default"],
      ["max_output_tokens", `${s.max_output_tokens.toLocaleString("en")} tokens`,
       s.max_output_tokens_source === "default" ? OUTPUT_DEFAULT
         : SOURCES[s.max_output_tokens_source] || s.max_output_tokens_source, false],
    ];
    for (const name of SENT_IF_SET) {
      const value = s[name];
      if (value === null || value === undefined || (Array.isArray(value) && !value.length)) {
        out.push([name, "not sent", NOT_SENT, false]);
      } else {
        out.push([name, typeof value === "string" ? value : JSON.stringify(value),
                  SOURCES.agent, false]);
      }
    }
    return out;
  }

  function cell(text, className) {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    return td;
  }

  function draw(settings) {
    const body = $("cp-settings-table").tBodies[0];
    if (!settings) {
      body.replaceChildren();
      return;
    }
    body.replaceChildren(...rows(settings).map(([name, value, source, guess]) => {
      const tr = document.createElement("tr");
      tr.dataset.setting = name;
      tr.append(cell(name), cell(value), cell(source, guess ? "cp-source cp-guess" : "cp-source"));
      return tr;
    }));
    $("cp-settings-note").textContent = settings.context_window_source === "default"
      ? "hango does not know this model's window: compaction and the quota use the guess " +
        "above. Set config.model_settings.context_window on the agent."
      : "";
  }

  root.addEventListener("context:snapshot", (event) => draw(event.detail.model_settings));
})();
