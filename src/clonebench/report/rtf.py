"""The RTF column: from a timing run (``adversary.measure=ttfb``) of the same pairs and server as a quality run.

RTF = Σ request time / Σ audio seconds over the timing run's generated samples, where the request time is
the client-side time of the successful streamed attempt (``synthesis_time_s``; a retried sample's failed
attempts are not counted) and the audio seconds are those received. A quality run's own request times are
never used: they run unstreamed, may be inflated by retries and back-off, and are not what was measured.
"""

from __future__ import annotations

import json
from pathlib import Path

from clonebench.core.errors import ClonebenchError

SAME_SERVER = ("protocol", "endpoint_urls", "request", "service_code", "service_checkpoint", "service_codec_checkpoint")


def is_timing_run(run_dir: Path) -> bool:
    manifest = Path(run_dir) / "run_manifest.json"
    return manifest.is_file() and json.loads(manifest.read_text(encoding="utf-8")).get("measure") == "ttfb"


def load_timing(run_dir: Path) -> dict:
    manifest = json.loads((Path(run_dir) / "run_manifest.json").read_text(encoding="utf-8"))
    manifest["_run_dir"] = str(run_dir)
    return manifest


def _differences(quality: dict, timing: dict) -> list[str]:
    out = []
    if quality.get("fingerprints", {}).get("input") != timing.get("fingerprints", {}).get("input"):
        out.append("pairs (input fingerprint)")
    qp, tp = quality.get("generation_provenance", {}), timing.get("generation_provenance", {})
    for key in SAME_SERVER:
        a, b = qp.get(key), tp.get(key)
        if key == "endpoint_urls":
            a, b = sorted(a or []), sorted(b or [])
        if a != b:
            out.append(f"server {key}")
    return out


def rtf_cell(timing: dict) -> dict:
    done = [s for s in timing.get("samples", []) if s.get("status") == "generated" and s.get("duration_s")]
    if not done:
        raise ClonebenchError(f"{timing['_run_dir']}: the timing run generated no audio; no RTF can be computed")
    request = sum(float(s["synthesis_time_s"]) for s in done)
    audio = sum(float(s["duration_s"]) for s in done)
    return {"mean": request / audio, "n": len(done), "n_requested": len(timing.get("samples", [])),
            "retried": sum(1 for s in done if (s.get("attempts") or 1) > 1),
            "request_s": request, "audio_s": audio}


def footnote(label: str, timing: dict, cell: dict) -> str:
    concurrency = timing.get("config", {}).get("adversary", {}).get("concurrency")
    return (f"RTF ({label}) = Σ request time / Σ audio seconds = {cell['request_s']:.2f} s / {cell['audio_s']:.2f} s "
            f"over {cell['n']}/{cell['n_requested']} samples of timing run {timing.get('run_name')} "
            f"({timing['_run_dir']}; adversary.measure=ttfb, same pairs and server as the quality run): streamed HTTP "
            f"requests timed at the client (network, queueing and decoding included; concurrency {concurrency}; "
            f"{cell['retried']} retried sample(s), only their successful attempt counted). Not the paper's "
            "in-process RTF.")


def attach_rtf(rows: list[dict], generations: list[dict], timings: list[dict]) -> None:
    """Put an RTF cell (and its footnote) on each run row whose quality run has a matching timing run.

    ``rows[i]`` is the row of the quality run whose generation manifest is ``generations[i]``. Every timing
    run must match exactly one quality run (same pairs, same server); otherwise the error says what differs.
    """
    used = set()
    for timing in timings:
        matches = [i for i, g in enumerate(generations) if not _differences(g, timing)]
        if not matches:
            why = "; ".join(f"{rows[i]['name']}: {', '.join(_differences(g, timing))}" for i, g in enumerate(generations))
            raise ClonebenchError(f"timing run {timing['_run_dir']} matches no quality run given ({why or 'none given'})"
                                  "; time the same pairs against the same server (adversary.measure=ttfb)")
        for i in matches:
            if i in used:
                raise ClonebenchError(f"{rows[i]['name']}: more than one timing run matches it; give one")
            used.add(i)
            cell = rtf_cell(timing)
            rows[i]["cells"]["rtf"] = {k: cell[k] for k in ("mean", "n", "n_requested")}
            rows[i].setdefault("notes", []).append(footnote(rows[i]["name"], timing, cell))
