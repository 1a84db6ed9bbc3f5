"""The early stop on a repeated 500 compares what errors mean (issue #42 item 5): every adapter's 500 bodies differ
between attempts by parts that say nothing about the failure (a Triton instance, a Python object's address, a
request id, a time); those are set aside, and everything else still tells two errors apart."""

from __future__ import annotations

import json

from clonebench.adversary.error_meaning import error_meaning
from clonebench.adversary.triton_kserve import instance_key


def detail(text: str) -> bytes:
    return json.dumps({"detail": text}).encode()


def test_per_attempt_parts_are_set_aside():
    same = [(detail("RuntimeError: <Tensor object at 0x7f3a2c1b9e50> has no len()"),
             detail("RuntimeError: <Tensor object at 0x7f3a2c1ba0d0> has no len()")),               # SGLang, Zonos 2
            (detail("request 3f2b8c1e-5d4a-4c3b-9a2e-1f0e9d8c7b6a failed: No audio generated"),
             detail("request 0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f failed: No audio generated")),      # request ids
            (b'{"error": "req-9f8e7d6c5b4a39281706f5e4 at 2026-12-06T07:01:02.123Z: engine died"}',
             b'{"error": "req-0a1b2c3d4e5f60718293a4b5 at 2026-12-06T07:01:05.456Z: engine died"}')]  # vLLM-style
    for a, b in same:
        assert a != b and error_meaning(500, a) == error_meaning(500, b), (a, b)


def test_triton_instances_are_one_model():
    key = instance_key("cosyvoice2")
    bodies = [json.dumps({"error": f"Failed to process the request(s) for model instance 'cosyvoice2_0_{k}', "
                                   "message: RuntimeError: shape mismatch"}).encode() for k in range(3)]
    assert len({error_meaning(500, b) for b in bodies}) == 3          # without the protocol's key: three errors
    assert len({error_meaning(500, b, key) for b in bodies}) == 1     # with it: one
    other = bodies[0].replace(b"shape mismatch", b"CUDA error")
    assert error_meaning(500, other, key) != error_meaning(500, bodies[0], key)


def test_what_differs_in_meaning_still_differs():
    oom = "CUDA out of memory. Tried to allocate {} GiB"
    assert error_meaning(500, detail(oom.format("2.00"))) != error_meaning(500, detail(oom.format("1.50")))
    assert error_meaning(500, b"x") != error_meaning(503, b"x")
    assert error_meaning(500, detail("No audio generated")) != error_meaning(500, detail("Text too long"))
