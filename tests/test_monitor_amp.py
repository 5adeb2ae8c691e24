"""Monitor and GradScaler (torch.amp.GradScaler("cpu") works on CPU): overflow skips are events,
not errors; K consecutive skips, a collapsing scale or a non-finite loss are errors."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import numlint  # noqa: E402
from numlint.monitor import NonFiniteError  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def setup(init_scale: float) -> tuple[nn.Module, torch.optim.Optimizer, torch.amp.GradScaler]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_interval=1000)
    return model, opt, scaler


def amp_step(model: nn.Module, opt: torch.optim.Optimizer, scaler: torch.amp.GradScaler) -> None:
    opt.zero_grad()
    loss = model(torch.randn(16, 4)).pow(2).sum() * 100.0
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()


def test_overflow_skips_are_events_not_errors() -> None:
    # A scale of 2**120 overflows float32 gradients: GradScaler skips and halves the scale until
    # the scaled gradients fit (the real fp16 story, reproduced in float32 on CPU).
    model, opt, scaler = setup(2.0**120)
    opt.param_groups[0]["lr"] = 0.0  # keep the gradients the same size from step to step
    monitor = numlint.watch(model, opt, scaler=scaler, log=None, max_skips=20, static=False)
    with monitor:
        for _ in range(12):
            amp_step(model, opt, scaler)
    skips = [e for e in monitor.events if e["event"] == "amp_overflow_skip"]
    steps = [e for e in monitor.events if e["event"] == "step"]
    assert len(skips) >= 1 and len(steps) >= 1
    assert len(skips) + len(steps) == 12
    assert not [e for e in monitor.events if e["event"] == "nonfinite"]
    first = skips[0]
    assert first["loss"] is not None and first["loss"] < float("inf")  # the loss was finite
    assert first["scale"] == first["scale_before"] / 2
    # one numbering: every event carries the step and attempt it belongs to, counted from 0
    assert first["step"] == 0 and first["iteration"] == 0
    assert monitor.step == len(steps) == steps[-1]["step"] + 1
    assert [e["iteration"] for e in skips + steps] == list(range(12))  # skips come first
    assert steps[-1]["scale"] == scaler.get_scale()
    assert all(e["grad_norm"] < float("inf") for e in steps)  # unscaled norms


class InfGrad(nn.Module):
    """Finite forward (sqrt(0) = 0), infinite gradient every step: AMP cannot fix this."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(x - x.detach()) + x


def test_consecutive_skips_are_divergence() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), InfGrad(), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    monitor = numlint.watch(model, opt, scaler=scaler, log=None, max_skips=3, static=False)
    with pytest.raises(NonFiniteError) as info:
        with monitor:
            for _ in range(10):
                amp_step(model, opt, scaler)
    ev = info.value.event
    assert ev["event"] == "amp_divergence" and "3 consecutive" in ev["reason"]
    assert ev["iteration"] == 2 and ev["step"] == 0  # the third attempt, none taken
    assert ev["module"] is not None  # where the overflowing gradient was first seen
    skips = [e for e in monitor.events if e["event"] == "amp_overflow_skip"]
    assert [e["consecutive"] for e in skips] == [1, 2, 3]


def test_collapsing_scale_is_divergence() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), InfGrad(), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cpu", init_scale=4.0)
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, opt, scaler=scaler, log=None, min_scale=1.5, static=False):
            for _ in range(10):
                amp_step(model, opt, scaler)
    ev = info.value.event
    assert ev["event"] == "amp_divergence" and "min_scale" in ev["reason"] and ev["scale"] == 1.0


def test_nonfinite_loss_under_amp_is_an_error() -> None:
    model, opt, scaler = setup(1024.0)
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, opt, scaler=scaler, log=None, static=False):
            opt.zero_grad()
            loss = model(torch.randn(4, 4)).sum() * float("inf")
            scaler.scale(loss).backward()
    assert info.value.event["phase"] == "loss" and info.value.event["module"] == "<loss>"


def test_scaler_methods_are_restored() -> None:
    model, opt, scaler = setup(1024.0)
    with numlint.watch(model, opt, scaler=scaler, log=None):
        assert "update" in vars(scaler)
    assert "update" not in vars(scaler) and "scale" not in vars(scaler)
