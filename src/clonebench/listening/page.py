"""The rating page: one ``index.html`` with its CSS and JavaScript inline (package data under ``static/``), the test's
design as embedded JSON, and the clips as ``clips/<opaque id>.wav`` beside it. It works from ``file://`` and from
any static host: no fetch, no CDN, no font, no request beyond its own clips (the Content-Security-Policy allows
nothing else). The page holds no system name, run, pair or speaker id: only opaque ids.

The report's rules apply: every text given on the command line is HTML-escaped; the embedded JSON cannot close
its <script> element (``script_json``)."""

from __future__ import annotations

from html import escape
from importlib import resources
from pathlib import Path

from clonebench.core.atomic import atomic_write_text
from clonebench.listening.design import Design
from clonebench.listening.wording import SCALES, instructions
from clonebench.report.html_page import script_json

PAGE = "index.html"
CSP = ("default-src 'none'; media-src 'self' file:; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
       "img-src 'self'")


def _static(name: str) -> str:
    return resources.files("clonebench.listening").joinpath("static", name).read_text(encoding="utf-8")


def page_config(design: Design, test_id: str, salt: str) -> dict:
    """What the page's script needs: ids only (trial, reference clip, clips), the scale and the integrity salt."""
    def trial(t):
        return {"id": t.trial_id, "reference": t.reference, "clips": list(t.clips)}
    return {"test_id": test_id, "kind": design.kind, "salt": salt, "scale": SCALES[design.kind],
            "training": [trial(t) for t in design.trials if t.phase == "training"],
            "trials": [trial(t) for t in design.trials if t.phase == "test"]}


def write_page(design: Design, test_id: str, salt: str, title: str, site: Path) -> Path:
    config = page_config(design, test_id, salt)
    paragraphs = "".join(f"<p>{escape(p)}</p>" for p in instructions(design.kind))
    n_trials, n_training = len(config["trials"]), len(config["training"])
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<title>{escape(title)}</title><style>{_static("listening.css")}</style></head>
<body><main><h1>{escape(title)}</h1>
<section id="welcome"><div class="instructions">{paragraphs}<p>The test has {n_training} training trial(s) and {n_trials} trials. At the end,
press <b>Download my ratings</b> and send the file to the person who gave you this test.</p></div>
<p><label>Your rater id <input id="rater" autocomplete="off" maxlength="64" size="24"></label>
<button id="new-id" type="button">Give me an id</button></p>
<p id="rater-error" class="error" role="alert"></p>
<button id="start" type="button">Start the training</button></section>
<section id="trial" hidden>
<div class="progress"><progress id="progress" max="1" value="0"></progress><span id="progress-text"></span></div>
<h2 id="phase"></h2><p id="question"></p><div id="players"></div><div id="answer"></div>
<p id="hint" role="status"></p><button id="next" type="button" disabled>Next</button></section>
<section id="between" hidden><h2>Training done</h2><p>The test starts now; your answers from here on are used.
Keep the volume as it is.</p><button id="begin" type="button">Start the test</button></section>
<section id="done" hidden><h2>Thank you</h2><p>Rater <b id="rater-shown"></b>: press the button to save your
ratings as a file, then send it to the person who gave you this test.</p>
<button id="download" type="button">Download my ratings</button>
<details><summary>The file's text, to copy if the download does not work</summary>
<textarea id="ratings-text" readonly></textarea></details></section>
</main>
<script type="application/json" id="test-config">{script_json(config)}</script>
<script>{_static("sha256.js")}
{_static("listening.js")}</script>
</body></html>
"""
    atomic_write_text(Path(site) / PAGE, page)
    return Path(site) / PAGE
