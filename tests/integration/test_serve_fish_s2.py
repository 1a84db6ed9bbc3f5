"""scripts/serve_fish_s2.py against a fake fish-speech checkout that serves /v1/health on loopback."""

from __future__ import annotations

import random
import subprocess
import sys
import time

import httpx
import numpy as np
import pytest

from tests.conftest import REPO

FAKE_SERVER = '''
import json, random, sys, os, threading
from http.server import BaseHTTPRequestHandler, HTTPServer
import numpy as np

state = {"argv": sys.argv[1:], "cwd": os.getcwd(), "random": random.random(), "numpy": float(np.random.rand()),
         "seed_env": os.environ.get("CLONEBENCH_STARTUP_SEED")}
listen = sys.argv[sys.argv.index("--listen") + 1]
host, port = listen.rsplit(":", 1)

class H(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"status": "ok", "state": state}).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass

server = HTTPServer((host, int(port)), H)
threading.Timer(20, server.shutdown).start()
with open(os.path.join(os.getcwd(), "port"), "w") as f: f.write(str(server.server_address[1]))
server.serve_forever()
'''


@pytest.fixture
def checkout(tmp_path):
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "__init__.py").write_text("")
    (tmp_path / "tools" / "api_server.py").write_text(FAKE_SERVER)
    return tmp_path


def test_seeds_before_import_and_passes_arguments(checkout):
    process = subprocess.Popen([sys.executable, str(REPO / "scripts" / "serve_fish_s2.py"), "--checkout", str(checkout),
                                "--seed", "1234", "--", "--listen", "127.0.0.1:0", "--workers", "1", "--half"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not (checkout / "port").exists():
            assert time.monotonic() < deadline and process.poll() is None, process.stdout.read()
            time.sleep(0.05)
        time.sleep(0.1)
        port = (checkout / "port").read_text()
        state = httpx.get(f"http://127.0.0.1:{port}/v1/health").json()["state"]
    finally:
        process.terminate()
        process.wait(timeout=30)
    random.seed(1234)
    np.random.seed(1234)
    assert state["random"] == random.random() and state["numpy"] == float(np.random.rand())
    assert state["argv"] == ["--listen", "127.0.0.1:0", "--workers", "1", "--half"]
    assert state["cwd"] == str(checkout.resolve()) and state["seed_env"] == "1234"


@pytest.mark.parametrize("workers", [["--workers", "2"], ["--workers=4"]])
def test_refuses_more_than_one_worker(checkout, workers):
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "serve_fish_s2.py"), "--checkout", str(checkout),
                             "--", "--listen", "127.0.0.1:0", *workers], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "refused" in result.stderr
    assert not (checkout / "port").exists()


def test_refuses_a_folder_that_is_not_a_checkout(tmp_path):
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "serve_fish_s2.py"), "--checkout", str(tmp_path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "tools/api_server.py not found" in result.stderr
