// Server mode of the listening-test page: injected only by `clonebench listening-serve` (never part of the built
// page, which stays a static page with no network). The rater's token is in the link's fragment (#token=...),
// which browsers never send; it goes to this server's /api only, in an Authorization header. The server gives the
// rater id, the trial order stored for this rater and the answers already saved: a reload resumes where the rater
// stopped. Each answer is posted before the page moves on; the next trial is shown only once the server has saved it.
// The served page holds no trial list and the clips are served only to a rater: /api/config's answer sets an
// HttpOnly cookie (Path=/clips/, SameSite=Strict) that the page's <audio> elements send, so no URL holds the token.
window.listeningServer = function (hooks, page) {
  "use strict";
  var $ = page.$, state = page.state, server = null;
  var token = new URLSearchParams(window.location.hash.slice(1)).get("token");

  function api(method, path, body) {
    var headers = { "Content-Type": "application/json" };
    if (token) { headers.Authorization = "Bearer " + token; }
    return fetch(path, { method: method, headers: headers, cache: "no-store", credentials: "same-origin",
                         body: body === undefined ? undefined : JSON.stringify(body) })
      .then(function (r) {
        return r.json().catch(function () { return {}; }).then(function (b) { b.status = r.status; b.ok = r.ok; return b; });
      });
  }

  function fail(text) { $("rater-error").textContent = text; $("hint").textContent = text; }

  function completed(answer) {
    var done = $("done"), note = document.createElement("p");
    note.id = "server-complete";
    note.textContent = "Your answers are saved: you do not need to send a file." +
      (answer.completion_code ? " Your completion code: " + answer.completion_code : "");
    done.insertBefore(note, done.firstChild.nextSibling);
    if (answer.redirect) {
      var link = document.createElement("a");
      link.href = answer.redirect; link.id = "server-redirect"; link.textContent = "Continue";
      note.appendChild(document.createTextNode(" ")); note.appendChild(link);
      setTimeout(function () { window.location.assign(answer.redirect); }, 1500);
    }
  }

  function ready(config) {
    server = config;
    $("rater").value = config.rater_id; $("rater").readOnly = true; $("new-id").hidden = true;
    $("start").textContent = config.answered.training.length || config.answered.test.length ? "Continue" : $("start").textContent;
    $("start").disabled = false;
    state.downloaded = true;  // the answers are on the server: leaving the page loses nothing
  }

  hooks.start = function () {
    if (!server) { return; }
    var order = server.order, answered = server.answered;
    state.rater = server.rater_id;
    state.training = order.training; state.test = order.test;
    state.results = { training: answered.training.slice(), test: answered.test.slice() };
    state.t0 = performance.now();
    state.startedAt = new Date().toISOString();
    $("rater-shown").textContent = server.rater_id;
    $("welcome").hidden = true;
    if (server.finished) { page.finish(); completed(server); return; }
    var training = answered.training.length < order.training.length;
    state.phase = training ? "training" : "test";
    state.list = training ? state.training : state.test;
    state.index = training ? answered.training.length : answered.test.length;
    $("between").hidden = true; $("trial").hidden = false;
    page.show();
  };

  hooks.answer = function (phase, record, proceed) {
    $("next").disabled = true;
    $("hint").textContent = "Saving your answer\u2026";
    api("POST", "/api/answer", { phase: phase, record: record }).then(function (answer) {
      if (!answer.ok) {
        fail("Your answer was not saved (" + (answer.error || "error " + answer.status) + ")." +
             (answer.status === 409 ? " Reload the page: it continues after your last saved answer." : ""));
        $("next").disabled = answer.status === 409 || answer.status === 401;
        return;
      }
      $("hint").textContent = "";
      proceed();
      if (answer.finished) { completed(answer); }
    }, function () {
      fail("The server could not be reached: your answer was not saved. Check your connection and press Next again.");
      $("next").disabled = false;
    });
  };

  $("start").disabled = true;
  var begin = token ? Promise.resolve(null) : api("GET", "/api/mode").then(function (mode) {
    var participant = mode.open_param && new URLSearchParams(window.location.search).get(mode.open_param);
    if (!participant) { return Promise.reject(new Error("This page needs the personal link you were given.")); }
    return api("POST", "/api/join", { participant: participant }).then(function (joined) {
      if (!joined.ok) { return Promise.reject(new Error(joined.error || "could not join")); }
      token = joined.token;
      window.history.replaceState(null, "", window.location.pathname + window.location.search + "#token=" + token);
    });
  });
  begin.then(function () { return api("GET", "/api/config"); }).then(function (config) {
    if (!config.ok) { throw new Error(config.error || "error " + config.status); }
    ready(config);
  }).catch(function (e) { fail(String(e.message || e)); });
};
