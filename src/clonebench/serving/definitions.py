"""What each figure of a serving run means: written into its manifest (``serving_definitions``) and docs/serving.md."""

SERVING_DEFINITIONS = {
    "clock": "the client's monotonic clock (time.perf_counter); every time is from just before the request is handed "
             "to the HTTP client (connection set-up included) on the machine running clonebench",
    "ttfb_s": "time to first byte: to the first byte of the response body (the status line and headers excluded); a "
              "WAV header or an event prefix counts, so it can come before any audio",
    "ttfa_s": "time to first audio: to the arrival of the body chunk after which the protocol's decoder holds at "
              "least one whole audio sample (after any WAV header, inside the first audio event); a one-shot answer "
              "(not streamed by the server, or in a container read only whole) is handed over whole: its TTFA is its "
              "total time",
    "total_s": "to the last byte of the body",
    "audio_s": "seconds of audio in the whole answer (frames / sample rate of the validated WAV)",
    "rtf": "total_s / audio_s (below 1: made faster than real time)",
    "chunks": "every body chunk as the client received it (network reads, not the server's writes): t_ms since the "
              "request started, bytes, and audio_ms decodable after it",
    "player": "a simulated listener, for streamed answers only: it starts at the first chunk that brings the audio "
              "received to serving.prebuffer_s (or at the end of a shorter answer) and plays at 1x; when the audio "
              "received so far runs out before the stream ends it stalls until the next chunk and plays on at once; "
              "gaps under 1 ms are not stalls. start_s: request start to playback start; stalls: their count; "
              "stalled_s: seconds stalled; first_stall_s: request start to the first stall",
    "starved": "a streamed answer with at least one stall",
    "starvation_rate": "starved streams / successful streamed requests of the level",
    "cold": "the first request of the run, sent alone once the server is ready: reported apart, never in a level",
    "warmup": "serving.warmup_requests sent one at a time after the cold request: excluded",
    "closed_loop": "level N: N workers each send their next request as soon as their last one ended; the first "
                   "request of each worker (the ramp) is excluded, the next serving.requests_per_level are measured",
    "open_loop": "level R: requests arrive as a Poisson process of R per second (seeded exponential gaps) whatever is "
                 "in flight; the first serving.open_loop_ramp_requests arrivals are excluded",
    "percentiles": "p50/p95/p99 over the level's successful measured requests (numpy's linear interpolation), each "
                   "with a percentile-bootstrap interval over requests (serving.bootstrap_resamples, "
                   "serving.confidence)",
    "throughput": "audio seconds of the level's successful measured requests / wall seconds from the first measured "
                  "request's start to the last one's end",
    "errors": "measured requests that failed (sent once, never retried: status, transport, deadline, not audio)",
    "outputs_vs_alone": "quality under load: the level's successful measured answers whose WAV is byte-identical to "
                        "the same pair's first answer sent alone (cold, warm-up, closed-loop level 1; the request "
                        "bytes are the same); both WAVs of each differing pair are kept under under_load/ for "
                        "metrics.score_under_load (SIM to the alone answer, WER of each)",
    "capacity": "the largest level at which it and every lower level had no error, p95 TTFA within "
                "serving.ttfa_budget_s and a starvation rate within serving.starvation_bound (point estimates)",
}
