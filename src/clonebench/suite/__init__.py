"""RVCBench suites, definition to submission: definition/package (rvcbench's pinned files) -> rows -> inputs ->
protocol (each task's scoring) -> run (one generate/evaluate run per task; record: suite_manifest.json) ->
derived_task (derived_run: a derived task's own run) -> results -> changes, tables, html, outputs, submission
(rvcbench's schema). Docs: docs/suites.md."""
