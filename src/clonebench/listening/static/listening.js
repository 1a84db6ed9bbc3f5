// The listening-test page: rater id, training, trials in a per-rater order, ratings file. No network, no library.
// The order of trials (and of A/B or MUSHRA conditions) comes from a generator seeded with SHA-256(test id, rater
// id): one rater id always sees one order, two rater ids see two. Ids are opaque; the page knows no system.
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("test-config").textContent);
  var RATER = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
  var $ = function (id) { return document.getElementById(id); };
  var state = { rater: null, list: [], index: 0, phase: "training", results: { training: [], test: [] },
                t0: 0, startedAt: null, finished: false, downloaded: false, trial: null };
  var hooks = {};  // filled only by server.js, which `clonebench listening-serve` injects; empty from file://

  function sfc32(a, b, c, d) {  // small fast counter generator (PractRand-tested), 32-bit state words
    return function () {
      a |= 0; b |= 0; c |= 0; d |= 0;
      var t = (((a + b) | 0) + d) | 0;
      d = (d + 1) | 0;
      a = b ^ (b >>> 9);
      b = (c + (c << 3)) | 0;
      c = (c << 21) | (c >>> 11);
      c = (c + t) | 0;
      return (t >>> 0) / 4294967296;
    };
  }

  function shuffled(items, rand) {  // Fisher-Yates
    var out = items.slice();
    for (var i = out.length - 1; i > 0; i--) {
      var j = Math.floor(rand() * (i + 1));
      var x = out[i]; out[i] = out[j]; out[j] = x;
    }
    return out;
  }

  function canonical(value) {  // JSON with sorted keys and no spaces: what the integrity digest covers
    if (Array.isArray(value)) { return "[" + value.map(canonical).join(",") + "]"; }
    if (value !== null && typeof value === "object") {
      return "{" + Object.keys(value).sort().map(function (k) {
        return JSON.stringify(k) + ":" + canonical(value[k]);
      }).join(",") + "}";
    }
    return JSON.stringify(value);
  }

  function now() { return Math.round(performance.now() - state.t0); }

  function arrange(trial, rand) {
    var mixed = config.kind === "cmos" || config.kind === "arena" || config.kind === "mushra";
    return { id: trial.id, reference: trial.reference, clips: mixed ? shuffled(trial.clips, rand) : trial.clips.slice() };
  }

  function start() {
    if (hooks.start) { hooks.start(); return; }
    var id = $("rater").value.trim();
    if (!RATER.test(id)) {
      $("rater-error").textContent = "A rater id is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit.";
      return;
    }
    state.rater = id;
    var seed = listeningSha256.words(config.test_id + "\n" + id);
    var rand = sfc32(seed[0], seed[1], seed[2], seed[3]);
    for (var i = 0; i < 12; i++) { rand(); }
    state.training = config.training.map(function (t) { return arrange(t, rand); });
    state.test = shuffled(config.trials, rand).map(function (t) { return arrange(t, rand); });
    state.t0 = performance.now();
    state.startedAt = new Date().toISOString();
    $("rater-shown").textContent = id;
    $("welcome").hidden = true;
    begin("training");
  }

  function begin(phase) {
    state.phase = phase;
    state.list = phase === "training" ? state.training : state.test;
    state.index = 0;
    $("between").hidden = true;
    $("trial").hidden = false;
    show();
  }

  function player(clip, label) {
    var wrap = document.createElement("span");
    wrap.className = "player";
    var button = document.createElement("button");
    button.type = "button";
    button.className = "play";
    button.textContent = "\u25B6 " + label;
    button.setAttribute("data-clip", clip);
    var audio = document.createElement("audio");
    var owner = state.trial;  // events of this element belong to this trial, even if they come late
    audio.preload = "auto";
    audio.src = "clips/" + clip + ".wav";
    audio.addEventListener("error", function () {  // a missing or undecodable clip: the trial cannot be rated
      button.disabled = true;
      owner.broken = true;
      if (owner === state.trial) { update(); }
    });
    audio.addEventListener("ended", function () {
      owner.ends[clip] = (owner.ends[clip] || 0) + 1;
      button.classList.remove("playing");
    });
    button.addEventListener("click", function () {
      Array.prototype.forEach.call(document.querySelectorAll("#trial audio"), function (other) {
        if (other !== audio) { other.pause(); }
      });
      Array.prototype.forEach.call(document.querySelectorAll("#trial .play"), function (b) { b.classList.remove("playing"); });
      owner.plays[clip] = (owner.plays[clip] || 0) + 1;
      button.classList.add("played", "playing");
      audio.currentTime = 0;
      var playing = audio.play();
      if (playing && playing.catch) { playing.catch(function () { button.classList.remove("playing"); }); }
      update();
    });
    wrap.appendChild(button);
    wrap.appendChild(audio);
    return wrap;
  }

  function categoryAnswer() {
    var box = document.createElement("fieldset");
    box.className = "scale";
    var legend = document.createElement("legend");
    legend.textContent = config.scale.question;
    box.appendChild(legend);
    config.scale.points.forEach(function (point) {
      var label = document.createElement("label");
      var input = document.createElement("input");
      input.type = "radio";
      input.name = "rating";
      input.value = String(point[0]);
      input.addEventListener("change", function () { state.trial.rating = point[0]; update(); });
      label.appendChild(input);
      label.appendChild(document.createTextNode(config.kind === "arena" ? " " + point[1] :
        " " + (config.kind === "cmos" && point[0] > 0 ? "+" : "") + point[0] + "  " + point[1]));
      box.appendChild(label);
    });
    return box;
  }

  function mushraRows(clips) {
    var box = document.createElement("div");
    box.className = "mushra";
    clips.forEach(function (clip, k) {
      var row = document.createElement("div");
      row.className = "condition";
      row.appendChild(player(clip, String(k + 1)));
      var slider = document.createElement("input");
      slider.type = "range"; slider.min = "0"; slider.max = "100"; slider.step = "1"; slider.value = "50";
      slider.setAttribute("data-clip", clip);
      slider.setAttribute("aria-label", "rating of signal " + (k + 1));
      var value = document.createElement("output");
      value.textContent = "\u2013";
      slider.addEventListener("input", function () {
        state.trial.ratings[k] = parseInt(slider.value, 10);
        value.textContent = slider.value;
        row.classList.add("rated");
        update();
      });
      row.appendChild(slider);
      row.appendChild(value);
      box.appendChild(row);
    });
    var bands = document.createElement("p");
    bands.className = "bands";
    bands.textContent = config.scale.bands.map(function (b) { return b[2] + " " + b[0] + "\u2013" + b[1]; }).join(" \u00B7 ");
    box.appendChild(bands);
    return box;
  }

  function show() {
    var spec = state.list[state.index];
    var all = state.training.length + state.test.length;
    var done = (state.phase === "training" ? 0 : state.training.length) + state.index;
    $("progress").max = all;
    $("progress").value = done;
    $("progress-text").textContent = (state.phase === "training" ? "Training " : "Trial ") + (state.index + 1) +
      " of " + state.list.length;
    $("phase").textContent = state.phase === "training" ? "Training (not used in the results)" : "Test";
    state.trial = { spec: spec, shown: now(), plays: {}, ends: {}, rating: null,
                    ratings: spec.clips.map(function () { return null; }) };
    var players = $("players"), answer = $("answer");
    players.textContent = ""; answer.textContent = "";
    if (spec.reference) { players.appendChild(player(spec.reference, "Reference")); }
    if (config.kind === "mushra") {
      answer.appendChild(mushraRows(spec.clips));
    } else {
      var names = config.kind === "cmos" || config.kind === "arena" ? ["A", "B"] : [config.kind === "smos" ? "Test recording" : "Recording"];
      spec.clips.forEach(function (clip, k) { players.appendChild(player(clip, names[k])); });
      answer.appendChild(categoryAnswer());
    }
    $("question").textContent = config.kind === "mushra" ? config.scale.question : "";  // else: the scale's legend
    update();
    window.scrollTo(0, 0);
  }

  function update() {
    var trial = state.trial, spec = trial.spec;
    var needed = spec.clips.concat(spec.reference ? [spec.reference] : []);
    var unplayed = needed.filter(function (c) { return !trial.plays[c]; }).length;
    var unrated = config.kind === "mushra" ? trial.ratings.filter(function (r) { return r === null; }).length
      : (trial.rating === null ? 1 : 0);
    $("next").disabled = unplayed > 0 || unrated > 0 || trial.broken;
    $("hint").textContent = trial.broken ? "A recording could not be loaded: please tell the person who gave you this test."
      : unplayed ? "Play every recording first (" + unplayed + " not played yet)."
      : unrated ? (config.kind === "mushra" ? "Rate every signal (" + unrated + " not rated yet)." : "Choose a rating.") : "";
  }

  function next() {
    var trial = state.trial, spec = trial.spec;
    var record = { trial: spec.id, position: state.index, clips: spec.clips, reference: spec.reference,
                   plays: trial.plays, ends: trial.ends, shown_ms: trial.shown, answered_ms: now() };
    if (config.kind === "mushra") { record.ratings = trial.ratings.slice(); } else { record.rating = trial.rating; }
    if (hooks.answer) { hooks.answer(state.phase, record, function () { advance(record); }); return; }
    advance(record);
  }

  function advance(record) {
    state.results[state.phase].push(record);
    Array.prototype.forEach.call(document.querySelectorAll("#trial audio"), function (a) { a.pause(); });
    state.index++;
    if (state.index < state.list.length) { show(); return; }
    $("trial").hidden = true;
    if (state.phase === "training") { $("between").hidden = false; return; }
    finish();
  }

  function finish() {
    state.finished = true;
    var payload = { schema: "clonebench.listening.ratings/v1", test_id: config.test_id, kind: config.kind,
                    rater_id: state.rater, user_agent: navigator.userAgent, started_at: state.startedAt,
                    finished_at: new Date().toISOString(), training: state.results.training,
                    trials: state.results.test };
    var digest = listeningSha256.hex(config.salt + "\n" + canonical(payload));
    var text = JSON.stringify({ ratings: payload, integrity: { algorithm: "sha256", digest: digest } }, null, 1);
    $("ratings-text").value = text;
    $("progress").value = $("progress").max;
    $("done").hidden = false;
    $("download").addEventListener("click", function () {
      var url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
      var link = document.createElement("a");
      link.href = url;
      link.download = "ratings-" + config.test_id + "-" + state.rater + ".json";
      document.body.appendChild(link);
      link.click();
      link.remove();
      setTimeout(function () { URL.revokeObjectURL(url); }, 10000);
      state.downloaded = true;
    });
  }

  var given = new URLSearchParams(window.location.search).get("rater");
  if (given !== null) { $("rater").value = given; }
  $("new-id").addEventListener("click", function () {
    var bytes = new Uint8Array(6);
    window.crypto.getRandomValues(bytes);
    $("rater").value = "r-" + Array.prototype.map.call(bytes, function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
  });
  $("start").addEventListener("click", start);
  $("next").addEventListener("click", next);
  $("begin").addEventListener("click", function () { begin("test"); });
  window.addEventListener("beforeunload", function (event) {
    if (state.rater && !state.downloaded) { event.preventDefault(); event.returnValue = ""; }
  });
  if (window.listeningServer) { window.listeningServer(hooks, { $: $, state: state, show: show, finish: finish }); }
}());
