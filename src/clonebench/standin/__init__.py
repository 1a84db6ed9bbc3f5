"""A stand-in Fish Speech server for tests and the offline demo. Not a cloning model: see ``server``."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from clonebench.standin.server import StandinServer


@contextmanager
def running_standin(host: str = "127.0.0.1", port: int = 0, *, api_key: str | None = None, latency: float = 0.0,
                    serial: bool = True, references_dir: Path | None = None, protocol: str = "fish",
                    max_lifetime: float = 900.0, ignore_seed: bool = False,
                    vllm_build: str = "after-6553",
                    behaviours: dict[str, float] | str | None = None, tone: bool = False,
                    stream_profile=None) -> Iterator[StandinServer]:
    """Serve in a background thread; stops on exit from the block, or by itself after ``max_lifetime`` s."""
    server = StandinServer((host, port), api_key=api_key, latency=latency, serial=serial,
                           references_dir=references_dir, protocol=protocol, ignore_seed=ignore_seed,
                           vllm_build=vllm_build, behaviours=behaviours, tone=tone, stream_profile=stream_profile)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    timer = threading.Timer(max_lifetime, server.shutdown)
    timer.daemon = True
    timer.start()
    try:
        yield server
    finally:
        timer.cancel()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
