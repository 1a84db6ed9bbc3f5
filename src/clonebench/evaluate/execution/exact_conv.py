"""One-thread convolutions with the kernels ATen selects at several threads: ECAPA's bits at one thread per worker.

ATen picks a CPU convolution's backend in ``ConvParams::use_mkldnn`` (aten/src/ATen/native/Convolution.cpp, torch
2.11.0). A float32 CPU convolution, after a 1-D one is viewed as 2-D (``input.contiguous().unsqueeze(2)``, weight
``unsqueeze(2)``, stride ``(1, s)``, padding ``(0, p)``, dilation ``(1, d)``), goes to oneDNN
(``mkldnn_convolution``) when both hold:

- A: strided, or dilated, or batch >= 16, or the kernel is not 1x1, **or torch has more than one thread**;
- B: groups > 1, or both kernel sides > 3, or batch > 1, or the input has more than 20,480 elements;

else to the native kernels (``thnn_conv2d``, ``slow_conv_dilated2d``). The thread count enters only through A, and
only for an undilated, unstrided 1x1 convolution of batch < 16: with one thread such a layer with B true goes to
the native kernel, with two or more to oneDNN. oneDNN's result does not depend on the thread count, so computing
exactly those layers with ``torch.mkldnn_convolution`` on one thread gives the bits of the multi-thread selection
(tests/integration/test_exact_conv.py checks the embeddings byte for byte on 40+ clips; the rule is restated here
because ATen exposes no Python call that says which backend it would choose). Every other convolution is left to
ATen unchanged: its selection does not depend on the thread count.

The rule is only trusted for the torch versions whose source was read and whose bits were checked
(``VERIFIED_TORCH``); on another one :func:`unverified_reason` names the fix and callers keep torch's own path.

**Denormal rows.** A trained model keeps some output channels whose weights decayed below float32's smallest
normal number (ECAPA: 5 of ``asp.tdnn``'s 128 rows entirely, 13 of ``blocks.1.tdnn1``'s 1024 partly). Their
accumulators stay subnormal, and on Intel cores every vector FMA with a subnormal result takes a microcode assist
(~100x slower); oneDNN computes 16 output channels per vector, so a handful of such rows spread over the blocks
slows a whole layer (``asp.tdnn``: 3.3 s instead of 0.07 s on a 20 s clip, at one thread or two). Row order does
not enter any output element's arithmetic (each is its own sequence of FMAs over the input channels), so the rows
holding a subnormal weight are moved to the front, where they share as few vectors as possible, and the output is
put back in order by an exact copy: the same bytes (checked by the byte test and :func:`_self_check`), a fraction
of the assists. No weight or value is changed.
"""

from __future__ import annotations

import contextlib
import types

# torch versions whose use_mkldnn rule was read from the source and checked bit for bit (public version: "2.11.0")
VERIFIED_TORCH = ("2.11.0",)
# the input size above which a batch-1, groups-1, small-kernel convolution goes to oneDNN (ATen's constant)
MKLDNN_MIN_ELEMENTS = 20480
# what the fingerprint records: the selection the bits are defined by, whatever thread count computed them
SELECTION = "aten-use_mkldnn@threads>1"


def public_version(version: str) -> str:
    return version.split("+")[0]


def unverified_reason(torch_module=None) -> str | None:
    """None when the exact one-thread path may be used in this process; else why not, with the fix."""
    torch = torch_module
    if torch is None:
        import torch
    version = public_version(torch.__version__)
    if version not in VERIFIED_TORCH:
        return (f"torch {torch.__version__}: its convolution backend rule (use_mkldnn) was verified only for torch "
                f"{', '.join(VERIFIED_TORCH) or '(none)'}, so ECAPA keeps torch's own multi-thread path (slower, "
                f"same protocol); fix: install torch=={(VERIFIED_TORCH or ('2.11.0',))[-1]} (the project's pin), or "
                "check the rule for this version and add it to clonebench.evaluate.execution.exact_conv.VERIFIED_TORCH")
    if not (torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled):
        return (f"torch {torch.__version__} has oneDNN (mkldnn) unavailable or disabled, so ECAPA keeps torch's own "
                "path; fix: a torch build with oneDNN, and leave torch.backends.mkldnn.enabled on")
    if not _self_checked:
        _self_checked.append(_self_check(torch))
    if not _self_checked[0]:
        return (f"on this host a 1x1 convolution routed by the rule on one thread did not give the bytes of torch's "
                f"two-thread path (torch {torch.__version__}), so ECAPA keeps torch's own path; fix: report the host's "
                "CPU (lscpu) with `clonebench doctor --eval`'s output")
    return None


_self_checked: list[bool] = []


def _self_check(torch) -> bool:
    """A layer the thread count re-routes (1x1, 1024 channels, 100 frames, as ECAPA's: above ATen's size threshold,
    and one whose plain one-thread bytes differ on the project's machines), computed by
    :func:`conv1d` on one thread and by ``F.conv1d`` on two: the same bytes? (a few milliseconds)"""
    import torch.nn.functional as F

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(1, 1024, 100, generator=generator)
    w = torch.randn(1024, 1024, 1, generator=generator) * 0.03
    b = torch.randn(1024, generator=generator)
    w[3:1024:97] *= 1e-39  # rows of subnormal weights, moved to the front and back by the exact path
    with torch.inference_mode():
        with torch_threads(2):
            two = F.conv1d(x, w, b)
        with torch_threads(1):
            one = conv1d(torch, x, w, b, 1, 0, 1, 1)
            moved = conv1d(torch, x, w, b, 1, 0, 1, 1, rows=front_rows(torch, w, b))
    return bool(torch.equal(one, two) and torch.equal(moved, two))


def uses_mkldnn(input_shape: tuple, kernel: int, stride: int, dilation: int, groups: int, threads: int) -> bool:
    """ATen's use_mkldnn for a float32 CPU conv1d on a dense input, viewed as 2-D (see the module docstring)."""
    batch = input_shape[0]
    elements = 1
    for size in input_shape:
        elements *= size
    a = stride != 1 or dilation != 1 or batch >= 16 or kernel != 1 or threads > 1  # the 2-D view's kernel is 1 x k
    b = groups > 1 or batch > 1 or elements > MKLDNN_MIN_ELEMENTS  # "both kernel sides > 3" is false for 1 x k
    return a and b


def front_rows(torch, weight, bias):
    """``(weight, bias, order)`` with the output rows that hold a subnormal weight moved to the front (``order``
    puts the output back); None when there is nothing to move (no such row, or every row is one)."""
    if weight.dim() != 3 or weight.dtype != torch.float32:
        return None
    tiny = torch.finfo(weight.dtype).tiny
    subnormal = ((weight.abs() < tiny) & (weight != 0)).flatten(1).any(1)
    count = int(subnormal.sum())
    if count == 0 or count == weight.shape[0] or bool(subnormal[:count].all()):
        return None
    order = torch.argsort((~subnormal).to(torch.int8), stable=True)
    return (weight.index_select(0, order).contiguous(),
            bias.index_select(0, order).contiguous() if bias is not None else None, torch.argsort(order))


def conv1d(torch, x, weight, bias, stride: int, padding: int, dilation: int, groups: int, rows=None):
    """``F.conv1d`` with the multi-thread backend selection, whatever torch's thread count (dense float32 CPU
    input without autograd; anything else goes to ``F.conv1d`` as is). ``rows``: :func:`front_rows` of this
    weight and bias (groups 1), to compute a layer that oneDNN computes with its subnormal rows moved to the front
    (at any thread count: oneDNN's bytes do not depend on it)."""
    import torch.nn.functional as F

    shape, kernel = tuple(x.shape), weight.shape[-1]
    dense = (x.dim() == 3 and x.dtype == torch.float32 and x.device.type == "cpu" and x.layout == torch.strided
             and not torch.is_grad_enabled())
    rows = rows if groups == 1 else None
    rerouted = torch.get_num_threads() == 1 and not uses_mkldnn(shape, kernel, stride, dilation, groups, threads=1)
    if not (dense and uses_mkldnn(shape, kernel, stride, dilation, groups, threads=2)
            and (rerouted or rows is not None)):
        return F.conv1d(x, weight, bias, stride, padding, dilation, groups)
    # ATen's own steps for this backend: contiguous input, both viewed as 2-D, mkldnn_convolution, viewed back
    x4 = x.contiguous().unsqueeze(2)
    order = None
    if rows is not None:
        weight, bias, order = rows
    w4 = weight.unsqueeze(2).contiguous()
    b = bias.contiguous() if bias is not None else None
    out = torch.mkldnn_convolution(x4, w4, b, (0, padding), (1, stride), (1, dilation), groups).squeeze(2)
    return out if order is None else out.index_select(1, order)


def _conv_forward(self, input, weight, bias):
    """``nn.Conv1d._conv_forward`` with :func:`conv1d` (the same padding steps)."""
    import torch
    import torch.nn.functional as F

    if isinstance(self.padding, str):  # 'same'/'valid' strings: torch's path (ECAPA's layers use integers)
        return type(self)._conv_forward(self, input, weight, bias)
    if self.padding_mode != "zeros":
        input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
        padding = 0
    else:
        padding = self.padding[0]
    moved = self.__dict__.get("_exact_rows")
    if moved is not None and moved[0] != _identity(weight, bias):  # computed for these very tensors, unchanged
        moved = None
    return conv1d(torch, input, weight, bias, self.stride[0], padding, self.dilation[0], self.groups,
                  rows=None if moved is None else moved[1])


def _identity(weight, bias) -> tuple:
    """The tensors and their in-place versions: a weight loaded or edited in place after :func:`install` no longer
    matches its moved copy, which is then not used."""
    return (id(weight), weight._version, id(bias), None if bias is None else bias._version)


def install(model) -> int:
    """Route every ``nn.Conv1d`` inside ``model`` through :func:`conv1d` (the module's own instances only; the
    class and other models are untouched); returns how many. The caller checks :func:`unverified_reason` first."""
    import torch

    count = 0
    for module in model.modules():
        if type(module) is torch.nn.Conv1d:
            module._conv_forward = types.MethodType(_conv_forward, module)
            if module.groups == 1:
                with torch.no_grad():
                    moved = front_rows(torch, module.weight.detach(), None if module.bias is None
                                       else module.bias.detach())
                if moved is not None:
                    module._exact_rows = (_identity(module.weight, module.bias), moved)
            count += 1
    return count


def uninstall(model) -> None:
    import torch

    for module in model.modules():
        if type(module) is torch.nn.Conv1d:
            module.__dict__.pop("_conv_forward", None)
            module.__dict__.pop("_exact_rows", None)


@contextlib.contextmanager
def torch_threads(n: int):
    """torch's intra-op thread count set to ``n`` for the block, restored after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
