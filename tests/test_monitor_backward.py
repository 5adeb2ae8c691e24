"""Monitor, backward side: backward-phase origin, loss phase, parameters after the step,
gradient norms, explosion and vanishing events, per-parameter statistics."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import numlint  # noqa: E402
from numlint.monitor import NonFiniteError  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class RowNorm(nn.Module):
    """sqrt(sum(h**2)): finite forward, NaN gradient for an all-zero row (0/0)."""

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return torch.sqrt((h**2).sum(-1, keepdim=True)) * h


def backward_nan_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), RowNorm(), nn.Linear(8, 1))


def test_backward_nan_is_located_where_the_gradient_broke() -> None:
    model = backward_nan_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 4)
    with torch.no_grad():  # every ReLU output zero: RowNorm's forward is 0, its gradient 0/0
        model[0].weight.zero_()
        model[0].bias.fill_(-1.0)
    with pytest.raises(NonFiniteError) as info:  # (every row's NaN dropped by the ReLU)
        with numlint.watch(model, opt, log=None, static=False, module_hooks=True):
            out = model(x)  # forward is finite
            out.sum().backward()
            opt.step()  # never reached: the error comes out of backward()
    ev = info.value.event
    assert ev["phase"] == "backward"
    assert ev["module"] == "2" and ev["origin"] is True
    assert ev["kind"] == "nan" and ev["gradient_of"] == "input"
    assert all(not torch.isnan(p).any() for p in model.parameters())  # step never ran
    downstream = [e for e in info.value.events if e["module"] in ("1", "0")]
    assert downstream and all(not e["origin"] for e in downstream)


@pytest.mark.parametrize(
    ("between", "origin"),
    [
        pytest.param((), "1", id="rownorm-after-linear"),
        pytest.param((nn.Dropout(0.0),), "2", id="through-an-unflagged-dropout"),
    ],
)
def test_backward_nan_seen_only_in_parameter_gradients_is_located_too(
    between: tuple[nn.Module, ...], origin: str
) -> None:
    # Linear -> [Dropout ->] RowNorm -> Linear: the NaN made by RowNorm's backward lands only in
    # the first Linear's output gradient (through the Dropout, which has no flag either), which
    # has no flag of its own (its weight gradient covers it): the check before optimizer.step
    # finds it and re-running backward names RowNorm.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), *between, RowNorm(), nn.Linear(8, 1))
    with torch.no_grad():
        model[0].weight.zero_()
        model[0].bias.zero_()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, opt, log=None, static=False):
            model(torch.randn(8, 4)).sum().backward()  # no error yet
            opt.step()
    ev = info.value.event
    assert ev["phase"] == "backward" and ev["module"] == origin and ev["origin"] is True
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_nonfinite_loss_gradient_is_a_loss_event() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Sigmoid())
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, log=None, static=False):
            p = model(torch.randn(3, 4))
            target = torch.zeros(3, 4)
            loss = -(target * torch.log(p - p)).sum()  # log(0): -inf, gradient inf/NaN
            loss.backward()
    ev = info.value.event
    assert ev["phase"] == "loss" and ev["module"] == "<loss>" and ev["origin"]


def test_criterion_loss_is_checked_before_backward() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    crit = nn.MSELoss()
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, log=None, criterion=crit, static=False):
            out = model(torch.randn(3, 4))
            crit(out, torch.full((3, 2), 3e19))  # finite inputs, (3e19)**2 overflows float32
            raise AssertionError("the loss check should have raised")
    ev = info.value.event
    assert ev["phase"] == "loss" and ev["module"] == "<loss>" and ev["kind"] == "inf"
    assert ev["origin"] is True and ev["inputs_finite"] is True


def test_parameters_made_nonfinite_by_the_step() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=float("inf"))
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, opt, log=None, static=False):
            for _ in range(3):
                model(torch.randn(2, 4)).sum().backward()
                opt.step()
                opt.zero_grad()
    ev = info.value.event
    assert ev["phase"] == "param" and ev["step"] == 1 and ev["origin"] is True
    assert ev["module"] in {n for n, _ in model.named_parameters()}
    # check_params="step" reports it from inside optimizer.step()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=float("inf"))
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, opt, log=None, static=False, check_params="step"):
            model(torch.randn(2, 4)).sum().backward()
            opt.step()
    assert info.value.event["phase"] == "param" and info.value.event["step"] == 1


def test_nonfinite_parameter_gradient_stops_the_step() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = model.weight.detach().clone()
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, opt, log=None, static=False, check_backward=False):
            model(torch.randn(2, 4)).sum().backward()
            model.weight.grad[0, 1] = float("inf")  # e.g. a bad gradient hook
            opt.step()
    ev = info.value.event
    assert ev["phase"] == "grad" and ev["module"] == "weight" and ev["kind"] == "inf"
    assert torch.equal(model.weight, before)  # raised before the optimizer applied it


def test_grad_norm_is_logged_every_step(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    expected = []
    log = tmp_path / "ev.jsonl"
    with numlint.watch(model, opt, log=log):
        for _ in range(4):
            opt.zero_grad()
            model(torch.randn(5, 4)).pow(2).mean().backward()
            expected.append(
                float(torch.nn.utils.get_total_norm([p.grad for p in model.parameters()]))
            )
            opt.step()
    steps = [json.loads(line) for line in log.read_text().splitlines()]
    steps = [e for e in steps if e["event"] == "step"]
    assert [e["step"] for e in steps] == [0, 1, 2, 3]  # numbered from 0, as incidents are
    for e, norm in zip(steps, expected, strict=True):
        assert math.isclose(e["grad_norm"], norm, rel_tol=1e-5)


def test_explosion_and_vanishing_events() -> None:
    torch.manual_seed(0)

    class TwoHeads(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Linear(4, 4)
            self.dead = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.body(x) + 0.0 * self.dead(x)  # dead gets exactly-zero gradients

    model = TwoHeads()
    opt = torch.optim.SGD(
        [
            {"params": model.body.parameters(), "name": "body"},
            {"params": model.dead.parameters(), "name": "dead"},
        ],
        lr=0.0,
    )
    monitor = numlint.watch(
        model, opt, log=None, explosion_factor=5.0, explosion_warmup=5, grad_stats=True
    )
    with monitor:
        for i in range(12):
            opt.zero_grad()
            scale = 1000.0 if i == 10 else 1.0
            (model(torch.randn(8, 4)).sum() * scale).backward()
            opt.step()
    explosions = [e for e in monitor.events if e["event"] == "grad_explosion"]
    assert [e["step"] for e in explosions] == [10]  # the loop's i == 10
    assert explosions[0]["ratio"] > 5.0
    vanishing = [e for e in monitor.events if e["event"] == "grad_vanishing"]
    assert len(vanishing) == 12 and {e["group"] for e in vanishing} == {"dead"}
    stats = [e for e in monitor.events if e["event"] == "grad_stats"]
    assert len(stats) == 12
    rows = {r["name"]: r for r in stats[0]["params"]}
    assert set(rows) == {"body.weight", "body.bias", "dead.weight", "dead.bias"}
    assert rows["dead.weight"]["absmax"] == 0.0 and rows["body.bias"]["absmax"] > 0
    assert rows["body.bias"]["std"] >= 0 and not rows["body.bias"]["nonfinite"]


def test_optimizer_is_found_when_not_passed() -> None:
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    other = torch.optim.SGD([torch.zeros(2, requires_grad=True)], lr=0.1)
    monitor = numlint.watch(model, log=None)
    with monitor:
        for _ in range(3):
            model(torch.randn(4, 3)).sum().backward()
            opt.step()
            other.step()  # not this model's: ignored
    assert monitor.step == 3
    assert [e["step"] for e in monitor.events if e["event"] == "step"] == [0, 1, 2]
