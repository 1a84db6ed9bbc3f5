"""evaluate/execution/exact_conv.py: ATen's use_mkldnn rule as restated, the torch versions it is trusted for, and the route
on small tensors (the model-level bytes: tests/integration/test_exact_conv.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from clonebench.evaluate.execution import exact_conv
from clonebench.evaluate.execution.exact_conv import uses_mkldnn


@pytest.mark.parametrize("shape, kernel, stride, dilation, groups, one, two", [
    ((1, 1024, 100), 1, 1, 1, 1, False, True),     # 1x1, 102,400 elements: the layer the thread count re-routes
    ((1, 64, 320), 1, 1, 1, 1, False, False),      # exactly 20,480 elements: native at every thread count
    ((1, 64, 321), 1, 1, 1, 1, False, True),       # one frame more: over ATen's threshold
    ((1, 1024, 100), 3, 1, 1, 1, True, True),      # a kernel of 3: oneDNN at every thread count
    ((1, 128, 400), 3, 1, 2, 1, True, True),       # dilated
    ((1, 128, 10), 3, 1, 2, 1, False, False),      # dilated but small: native
    ((1, 6144, 1), 1, 1, 1, 1, False, False),      # ECAPA's last layer on pooled statistics: native
    ((2, 64, 10), 1, 1, 1, 1, False, True),        # batch 2: oneDNN with threads
    ((16, 64, 10), 1, 1, 1, 1, True, True),        # batch 16: oneDNN whatever the threads
    ((1, 64, 10), 1, 1, 1, 4, False, True),        # groups
    ((1, 64, 10), 1, 2, 1, 1, False, False),       # strided, small
])
def test_the_rule(shape, kernel, stride, dilation, groups, one, two):
    assert uses_mkldnn(shape, kernel, stride, dilation, groups, threads=1) is one
    assert uses_mkldnn(shape, kernel, stride, dilation, groups, threads=2) is two
    assert uses_mkldnn(shape, kernel, stride, dilation, groups, threads=8) is two


def _torch(version: str, mkldnn: bool = True):
    backends = SimpleNamespace(mkldnn=SimpleNamespace(is_available=lambda: mkldnn, enabled=mkldnn))
    return SimpleNamespace(__version__=version, backends=backends)


def test_only_verified_torch_versions_use_the_rule():
    reason = exact_conv.unverified_reason(_torch("2.12.0"))
    assert "2.12.0" in reason and "torch==2.11.0" in reason and "VERIFIED_TORCH" in reason
    assert "oneDNN" in exact_conv.unverified_reason(_torch("2.11.0+cpu", mkldnn=False))
    assert exact_conv.public_version("2.11.0+cu130") == "2.11.0"


def test_the_pinned_torch_routes_and_keeps_the_two_thread_bytes():
    import torch
    import torch.nn.functional as F

    assert exact_conv.unverified_reason() is None
    generator = torch.Generator().manual_seed(1)
    for shape, kernel, dilation in (((1, 1024, 60), 1, 1), ((1, 300, 80), 3, 2), ((1, 64, 10), 1, 1)):
        x = torch.randn(*shape, generator=generator).transpose(1, 2).contiguous().transpose(1, 2)  # strided view
        w = torch.randn(shape[1], shape[1], kernel, generator=generator) * 0.05
        b = torch.randn(shape[1], generator=generator)
        with torch.inference_mode():
            with exact_conv.torch_threads(2):
                two = F.conv1d(x, w, b, 1, 0, dilation, 1)
            with exact_conv.torch_threads(1):
                one = exact_conv.conv1d(torch, x, w, b, 1, 0, dilation, 1)
        assert torch.equal(one, two), shape


def test_install_routes_only_the_models_own_conv1d_layers():
    import torch

    model = torch.nn.Sequential(torch.nn.Conv1d(4, 4, 1), torch.nn.Linear(4, 4), torch.nn.Conv1d(4, 4, 3))
    other = torch.nn.Conv1d(4, 4, 1)
    assert exact_conv.install(model) == 2
    assert "_conv_forward" in vars(model[0]) and "_conv_forward" not in vars(other)
    x = torch.randn(1, 4, 9)
    with torch.inference_mode():
        assert torch.equal(model[0](x), torch.nn.functional.conv1d(x, model[0].weight, model[0].bias))
    exact_conv.uninstall(model)
    assert "_conv_forward" not in vars(model[0])


def test_rows_of_subnormal_weights_are_moved_to_the_front_and_the_bytes_kept():
    """A layer some of whose output rows decayed below float32's smallest normal number (as ECAPA's ``asp.tdnn``):
    computed with those rows moved to the front and the output put back, its bytes are torch's two-thread ones;
    a weight edited in place after install is computed as it now is, never from the stale moved copy."""
    import torch
    import torch.nn.functional as F

    generator = torch.Generator().manual_seed(2)
    conv = torch.nn.Conv1d(256, 96, 1)
    with torch.no_grad():
        conv.weight.copy_(torch.randn(96, 256, 1, generator=generator) * 0.05)
        conv.weight[[5, 40, 77]] *= 1e-38  # three dead rows
        conv.weight[60, :7] = 1e-40  # a live row with a few subnormal weights
        conv.bias[40] = 3e-39
    x = torch.randn(1, 256, 200, generator=generator)
    moved = exact_conv.front_rows(torch, conv.weight.detach(), conv.bias.detach())
    with torch.no_grad():
        assert torch.equal(moved[0][:4], conv.weight[[5, 40, 60, 77]])  # the four rows lead, in their order
        assert torch.equal(moved[0].index_select(0, moved[2]), conv.weight)  # and the order puts them back
        assert torch.equal(moved[1].index_select(0, moved[2]), conv.bias)
    assert exact_conv.front_rows(torch, torch.randn(8, 8, 1), None) is None  # nothing to move
    exact_conv.install(conv)
    assert "_exact_rows" in vars(conv)
    try:
        with torch.inference_mode():
            with exact_conv.torch_threads(2):
                two = F.conv1d(x, conv.weight, conv.bias)
            with exact_conv.torch_threads(1):
                one = conv(x)
            with exact_conv.torch_threads(2):
                moved_at_two = conv(x)  # oneDNN at two threads, the rows moved as well
        assert torch.equal(one, two) and torch.equal(moved_at_two, two)
        with torch.no_grad():
            conv.weight[0, 0] += 1.0  # in place: the moved copy is stale now
        with torch.inference_mode():
            with exact_conv.torch_threads(2):
                two = F.conv1d(x, conv.weight, conv.bias)
            with exact_conv.torch_threads(1):
                one = conv(x)
        assert torch.equal(one, two)
    finally:
        exact_conv.uninstall(conv)
    assert "_exact_rows" not in vars(conv)


def test_doctor_says_whether_the_exact_path_is_on_and_the_fix(monkeypatch, capsys):
    from clonebench.cli.doctor import Report, _ecapa_exact

    report = Report()
    _ecapa_exact(report)
    monkeypatch.setattr(exact_conv, "VERIFIED_TORCH", ("0.0.1",))
    _ecapa_exact(report)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("ok    ECAPA one-thread exact path")
    assert out[1].startswith("warn  ECAPA one-thread exact path off") and "fix: install torch==0.0.1" in out[1]
    assert report.failed == 0  # a fallback, not a broken installation
