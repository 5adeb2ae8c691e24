"""The monitor survives odd models and loops, and lets go of everything when closed."""

from __future__ import annotations

import gc
import weakref

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import numlint  # noqa: E402


class Odd(nn.Module):
    """Returns non-tensors and None, calls one submodule twice, has a frozen and an unused layer."""

    def __init__(self) -> None:
        super().__init__()
        self.shared = nn.Linear(4, 4)
        self.frozen = nn.Linear(4, 4)
        self.unused = nn.Linear(4, 4)  # its gradients stay None
        for p in self.frozen.parameters():
            p.requires_grad_(False)

    def forward(self, x):
        h = self.shared(self.shared(x))
        h = self.frozen(h)
        return {"out": h, "note": "text", "nothing": None, "n": 3, "items": [h.sum(), None]}


def _train(model, opt, monitor, steps=3, fail_at=None):
    with monitor:
        for i in range(steps):
            opt.zero_grad()
            out = model(torch.randn(2, 4))
            if i == fail_at:
                raise KeyError("user error inside the loop")
            out["out"].sum().backward()
            opt.step()


def test_odd_models_run_clean_and_are_released():
    torch.manual_seed(0)
    model = Odd()
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    monitor = numlint.watch(model, opt, log=None)
    _train(model, opt, monitor)
    events = list(monitor.events)
    assert [e for e in events if e.get("event") == "step"]
    assert not [e for e in events if e.get("kind") in ("nan", "inf")]
    assert not model._forward_hooks and not model.shared._forward_hooks
    # after close the monitor keeps no tensor alive
    probe = torch.randn(2, 4, requires_grad=True)
    ref = weakref.ref(probe)
    with numlint.watch(model, opt, log=None):
        model(probe)["out"].sum().backward()
    del probe
    gc.collect()
    assert ref() is None


def test_exception_inside_the_loop_removes_hooks():
    model = Odd()
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    with pytest.raises(KeyError):
        _train(model, opt, numlint.watch(model, opt, log=None), fail_at=1)
    assert not model.shared._forward_hooks and not model.frozen._forward_hooks
    model(torch.randn(2, 4))  # the model still works without the monitor


def test_backward_and_clip_are_restored_after_the_last_monitor() -> None:
    import numlint.monitor.capture as capture

    original = (torch.Tensor.backward, torch.nn.utils.clip_grad_norm_)
    model = nn.Linear(3, 1)
    outer = numlint.watch(model, log=None)
    inner = numlint.watch(nn.Linear(3, 1), log=None)
    with outer:
        assert torch.Tensor.backward is capture._backward
        with inner:
            model(torch.randn(2, 3)).sum().backward()
        assert torch.Tensor.backward is capture._backward  # outer still listens
    assert (torch.Tensor.backward, torch.nn.utils.clip_grad_norm_) == original
