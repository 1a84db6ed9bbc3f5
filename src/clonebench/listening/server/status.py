"""The admin view's numbers: raters created, started and finished, answers per trial and per system, and the
screening of the finished raters as it stands (``listening.screening``, the rules ``listening-results`` applies)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from clonebench.listening.ratings import Sheet
from clonebench.listening.screening import screen
from clonebench.listening.server.store import Store


def status(key: dict, store: Store) -> dict:
    raters = store.raters()
    per_trial = {row["trial"]: row["n"] for row in store.answer_counts()}
    test = [t for t in key["trials"] if t["phase"] == "test"]
    per_system: Counter = Counter()
    for trial in test:
        for clip in trial["clips"]:
            record = key["clips"][clip]
            per_system[record["system"] or record["role"]] += per_trial.get(trial["trial_id"], 0)
    sheets, listed = [], []
    for rater in raters:
        answers = store.answers(rater["id"])
        listed.append({"rater_id": rater["rater_id"], "participant": rater["participant"],
                       "created_at": rater["created_at"], "started_at": rater["started_at"],
                       "finished_at": rater["finished_at"], "training": len(answers["training"]),
                       "answered": len(answers["test"]), "of": len(rater["order"]["test"])})
        if rater["finished_at"]:
            sheets.append(Sheet(Path(f"server:{rater['rater_id']}"), "", rater["rater_id"], rater["user_agent"],
                                {r["trial"]: r for r in answers["test"]}))
    verdicts = screen(key, sheets) if sheets else []
    return {"test_id": key["test_id"], "kind": key["kind"], "trials": len(test),
            "raters": {"created": len(raters), "started": sum(1 for r in raters if r["started_at"]),
                       "finished": len(sheets), "kept": sum(v.kept for v in verdicts)},
            "answers_per_trial": {t["trial_id"]: per_trial.get(t["trial_id"], 0) for t in test},
            "answers_per_system": dict(sorted(per_system.items())),
            "screening": [{"rater_id": v.rater, "kept": v.kept, "checks": v.checks, "failed": len(v.failed),
                           "reason": v.reason} for v in verdicts],
            "rater_list": listed}


ADMIN_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Listening test: admin</title>
<style>body{font-family:sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #bbb;padding:.2em .6em;text-align:left}.error{color:#b00}</style></head>
<body><h1>Listening test: admin</h1><p id="error" class="error" role="alert"></p>
<p id="summary"></p><button id="export" type="button">Export the ratings files</button> <span id="exported"></span>
<h2>Raters</h2><table id="raters"></table><h2>Answers per system</h2><table id="systems"></table>
<h2>Screening (finished raters)</h2><table id="screening"></table>
<script>
(function () {
  "use strict";
  var token = new URLSearchParams(window.location.hash.slice(1)).get("token") || "";
  var $ = function (id) { return document.getElementById(id); };
  function call(method, path) {
    return fetch(path, { method: method, headers: { Authorization: "Bearer " + token }, cache: "no-store" })
      .then(function (r) {
        return r.json().then(function (b) { if (!r.ok) { throw new Error(b.error); } return b; });
      });
  }
  function table(el, head, rows) {
    el.textContent = "";
    [head].concat(rows).forEach(function (row, k) {
      var tr = document.createElement("tr");
      row.forEach(function (cell) {
        var td = document.createElement(k ? "td" : "th"); td.textContent = cell === null ? "" : String(cell);
        tr.appendChild(td);
      });
      el.appendChild(tr);
    });
  }
  function load() {
    call("GET", "/admin/api/status").then(function (s) {
      var r = s.raters;
      $("summary").textContent = "Test " + s.test_id + " (" + s.kind + ", " + s.trials + " trials): " +
        r.created +
        " raters, " + r.started + " started, " + r.finished + " finished, " + r.kept + " kept by the screening.";
      table($("raters"), ["rater", "participant", "started", "finished", "answered"], s.rater_list.map(function (x) {
        return [x.rater_id, x.participant, x.started_at, x.finished_at, x.answered + " / " + x.of]; }));
      table($("systems"), ["system", "answers"], Object.keys(s.answers_per_system).map(function (k) {
        return [k, s.answers_per_system[k]]; }));
      table($("screening"), ["rater", "kept", "failed checks", "why"], s.screening.map(function (v) {
        return [v.rater_id, v.kept ? "yes" : "no", v.failed + " / " + v.checks, v.reason]; }));
    }).catch(function (e) { $("error").textContent = String(e.message || e); });
  }
  $("export").addEventListener("click", function () {
    call("POST", "/admin/export").then(function (x) {
      $("exported").textContent = x.written.length + " file(s) written, " + x.unfinished + " rater(s) unfinished";
    }).catch(function (e) { $("error").textContent = String(e.message || e); });
  });
  load();
  setInterval(load, 10000);
}());
</script></body></html>
"""
