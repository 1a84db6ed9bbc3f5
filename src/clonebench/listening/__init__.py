"""Human listening tests built from runs: MOS (ITU-T P.800 ACR), SMOS (speaker similarity), CMOS (P.800 CCR)
and MUSHRA (ITU-R BS.1534-3) pages, and the statistics of the ratings that come back.

``clonebench listening-test`` writes a test folder: ``site/`` (the static page and its opaque clips: what raters
get) and ``key.json`` (which clip is which system: what the experimenter keeps). ``clonebench listening-results``
checks the raters' files against the key, screens raters and reports scores with confidence intervals; the paper
table (``clonebench report --listening``) shows them beside the predicted MOS.

Modules, in the order a test flows: sources (runs -> clips) -> design (sampling, trials, checks, opaque ids) ->
audio (resampling, anchor, degraded clip, loudness) -> wording + page (the HTML) -> build (the folder and key);
then ratings (reading and checking files) -> screening -> agreement and the raters x items bootstrap
(clonebench.stats.raters) -> results -> tables, paper_columns.
"""
