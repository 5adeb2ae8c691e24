"""Every incident attributed to the right place: bad data (and replay saying so), the pre-clip
gradient norm, a non-finite loss with finite gradients, the micro-batch of gradient
accumulation, later incidents in record mode (each once), partial vanishing gradients and the
static findings of the origin's own class. (DDP's rank of origin: test_monitor_distributed.)"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import load_module

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import numlint  # noqa: E402
from numlint.monitor import NonFiniteError  # noqa: E402
from numlint.monitor.events import describe  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def small_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))


def test_nan_in_the_input_batch_is_named_by_monitor_and_replay(tmp_path: Path) -> None:
    model = small_model()
    x = torch.randn(8, 4)
    x[2, 1] = float("nan")
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, log=tmp_path / "ev.jsonl", static=False):
            model(x)
    ev = info.value.event
    assert ev["module"] == "<input>" and ev["origin"] is True and ev["nan_count"] == 1
    message = str(info.value)
    assert "input data (input[0])" in message and "inputs finite" not in message
    result = numlint.replay(info.value.snapshot, model)
    assert result.found and result.phase == "data" and result.module == "<input>"
    assert result.tensor == "input[0]" and result.kind == "nan"
    assert "did not reproduce" not in str(result) and "input data" in str(result)


def test_nan_in_the_targets_is_named_by_monitor_and_replay(tmp_path: Path) -> None:
    model = small_model()
    crit = nn.MSELoss()
    y = torch.randn(8, 1)
    y[3, 0] = float("nan")
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, log=tmp_path / "ev.jsonl", criterion=crit, static=False):
            crit(model(torch.randn(8, 4)), y)
    ev = info.value.event
    assert ev["module"] == "<target>" and ev["phase"] == "loss" and ev["origin"] is True
    loss_ev = next(e for e in info.value.events if e["module"] == "<loss>")
    assert loss_ev["origin"] is False
    result = numlint.replay(info.value.snapshot, model, crit)
    assert result.found and result.phase == "data" and result.module == "<target>"
    assert "target data" in str(result)


def test_logged_norm_is_the_pre_clip_norm_and_spikes_are_explosions() -> None:
    model = small_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    real = []
    monitor = numlint.watch(model, opt, log=None, explosion_warmup=5, static=False)
    with monitor:
        for i in range(12):
            x = torch.randn(16, 4)
            loss = model(x).pow(2).mean() * (1000.0 if i == 10 else 1.0)
            loss.backward()
            real.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)))
            opt.step()
            opt.zero_grad()
    steps = [e for e in monitor.events if e["event"] == "step"]
    for e, norm in zip(steps, real, strict=True):
        assert math.isclose(e["grad_norm"], norm, rel_tol=1e-5)
        assert e["max_norm"] == 1.0 and e["grad_norm_clipped"] <= 1.0 + 1e-4
    assert steps[10]["grad_norm"] > 40
    explosions = [e for e in monitor.events if e["event"] == "grad_explosion"]
    assert [e["step"] for e in explosions] == [10]  # the loop's step 10, as numbered from 0


def test_nan_loss_with_finite_gradients_is_reported_without_criterion() -> None:
    model = nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, opt, log=None, static=False):
            for step in range(6):
                out = model(torch.randn(8, 4))
                ce = F.cross_entropy(out, torch.randint(0, 3, (8,)))
                # an entropy bonus on detached probabilities: 0 * log(0) = NaN at step 3
                p = torch.softmax(out.detach() * (1e4 if step == 3 else 1.0), -1)
                loss = ce + 0.01 * (p * torch.log(p)).sum(-1).mean()
                loss.backward()
                opt.step()
                opt.zero_grad()
    ev = info.value.event
    assert ev["event"] == "nonfinite" and ev["phase"] == "loss" and ev["module"] == "<loss>"
    assert ev["kind"] == "nan" and ev["step"] == 3 and ev["origin"] is True
    assert "None" not in str(info.value)


def test_overflowing_target_is_a_loss_incident_not_a_parameter_of_unknown_name() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    monitor = numlint.watch(model, opt, log=None, action="record", static=False)
    with monitor:
        for step in range(8):
            y = torch.randn(8, 1)
            if step == 2:
                y[0, 0] = 1e30  # finite, but its square overflows float32
            F.mse_loss(model(torch.randn(8, 4)), y).backward()
            opt.step()
            opt.zero_grad()
    errors = [e for e in monitor.events if e["event"] == "nonfinite" and e["origin"]]
    first = errors[0]
    assert first["phase"] == "loss" and first["module"] == "<loss>" and first["step"] == 2
    assert first["kind"] == "inf" and first["inf_count"] == 1
    for e in errors:
        assert e["module"] != "?" and "None" not in describe(e)


class SqrtAbs(nn.Module):
    """Finite forward; the gradient of sqrt(|h|) at h == 0 is inf * 0 = NaN."""

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(h.abs())


def test_gradient_accumulation_names_the_micro_batch(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8, bias=False), SqrtAbs(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, opt, log=tmp_path / "ev.jsonl", static=False):
            for step in range(4):
                for micro in range(4):
                    x = torch.rand(8, 4) + 0.5
                    if step == 2 and micro == 0:
                        x = torch.zeros(8, 4)  # h == 0: NaN born in this backward
                    (model(x).mean() / 4).backward()
                opt.step()
                opt.zero_grad()
    ev = info.value.event
    assert ev["phase"] == "backward" and ev["module"] == "1" and ev["origin"] is True
    assert ev["step"] == 2 and ev["micro_batch"] == 0 and ev["kind"] == "nan"
    snap = torch.load(info.value.snapshot, weights_only=False)
    assert torch.equal(snap["args"][0], torch.zeros(8, 4))  # the micro-batch that did it
    result = numlint.replay(info.value.snapshot, model)
    assert result.found and result.phase == "backward"


class Log1p(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log1p(self.lin(x))  # NaN where lin(x) < -1


def test_second_incident_is_localised_and_repeats_are_collapsed(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), Log1p(), nn.Linear(4, 1))
    with torch.no_grad():
        model[0].weight.mul_(0.1)
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    log = tmp_path / "ev.jsonl"
    monitor = numlint.watch(model, opt, log=log, action="record", static=False)
    with monitor:
        for step in range(30):
            x = torch.randn(8, 4) * 0.1
            if step == 3:
                x[0, 0] = float("nan")  # a bad batch, dropped by the loop
            if step == 10:
                x = x * 1000  # finite input; Log1p makes the NaN
            loss = model(x).pow(2).mean()
            if step == 3:
                continue
            loss.backward()
            opt.step()
            opt.zero_grad()
    events = [json.loads(line) for line in log.read_text().splitlines()]
    errors = [e for e in events if e["event"] == "nonfinite"]
    origins = [e for e in errors if e["origin"]]
    assert origins[0]["module"] == "<input>" and origins[0]["step"] == 3
    second = origins[1]
    assert second["module"] == "1" and second["phase"] == "forward"
    assert second["step"] == 9  # optimizer steps: the batch of loop step 3 was dropped
    assert second["nan_count"] > 0 and second.get("reproduced") is not False
    assert second["snapshot"] and Path(second["snapshot"]).exists()
    assert second["snapshot"] != origins[0]["snapshot"]
    # the NaN left in the weights fails every later step: logged once, then counted
    assert len({e["incident"] for e in errors}) <= 4 and len(origins) <= 4
    repeats = [e for e in events if e["event"] == "nonfinite_repeated"]
    assert repeats and sum(r["count"] for r in repeats) >= 15


def test_vanishing_is_reported_for_part_of_a_group() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))
    with torch.no_grad():
        model[2].bias.fill_(-100.0)  # the second ReLU is dead: 5 of 6 gradients are zero
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    monitor = numlint.watch(model, opt, log=None, static=False)
    with monitor:
        for _ in range(3):
            model(torch.randn(8, 4)).sum().backward()
            opt.step()
            opt.zero_grad()
    vanishing = [e for e in monitor.events if e["event"] == "grad_vanishing"]
    assert len(vanishing) == 3
    v = vanishing[0]
    assert v["zero_count"] == 5 and v["param_count"] == 6
    assert set(v["params"]) == {"0.weight", "0.bias", "2.weight", "2.bias", "4.weight"}


TWO_CLASSES = """
import torch
from torch import nn


class LogHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return torch.log(self.proj(x))


class Distance(nn.Module):
    def forward(self, a, b):
        return torch.sqrt(((a - b) ** 2).sum(-1))
"""


def test_static_findings_come_from_the_origin_class_only(tmp_path: Path) -> None:
    mod = load_module(tmp_path / "two_classes.py", TWO_CLASSES, "numlint_test_two_classes")
    torch.manual_seed(0)
    model = nn.Sequential(mod.LogHead())
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, log=None):
            model(torch.randn(8, 4))
    ev = info.value.event
    assert ev["module"] == "0" and ev["source_file"].endswith("two_classes.py")
    assert not [s for s in ev["static"] if "NUM201" in s["code"]]  # Distance's sqrt


class HalfScale(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x).half() * 60000.0  # overflows float16 (max 65504)
        return h.float()


def test_reported_dtype_is_the_ops_not_the_module_outputs() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), HalfScale(), nn.Linear(4, 1))
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, log=None, static=False):
            model(torch.randn(8, 4) * 10)
    ev = info.value.event
    assert ev["module"] == "1" and ev["kind"] == "inf" and ev["origin"] is True
    assert ev["dtype"] == "float16" and ev["output_dtype"] == "float32"
    assert ev["op"] == "aten::mul" and ev["source"].endswith(
        f":{HalfScale.forward.__code__.co_firstlineno + 1}"
    )


def test_a_loss_is_attributed_to_the_monitor_of_its_own_thread() -> None:
    import threading

    monitors = {}

    def train(name: str, nan_loss: bool) -> None:
        model = nn.Linear(4, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        monitor = numlint.watch(model, opt, log=None, action="record", static=False)
        monitors[name] = monitor
        with monitor:
            for _ in range(20):
                loss = model(torch.randn(8, 4)).pow(2).mean()
                if nan_loss:
                    loss = loss + (torch.zeros(()) * torch.log(torch.zeros(())))
                loss.backward()
                opt.step()
                opt.zero_grad()

    threads = [
        threading.Thread(target=train, args=("clean", False)),
        threading.Thread(target=train, args=("nan", True)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not [e for e in monitors["clean"].events if e["event"].startswith("nonfinite")]
    bad = [e for e in monitors["nan"].events if e["event"] == "nonfinite" and e["origin"]]
    assert bad and bad[0]["phase"] == "loss" and bad[0]["module"] == "<loss>"


ROW_NORM = """
import torch
from torch import nn


class RowNorm(nn.Module):
    def forward(self, x):
        h = x.tanh()
        return h / h.norm(dim=-1, keepdim=True)
"""


def test_static_findings_of_every_confidence_are_tied_back(tmp_path: Path) -> None:
    """The division by a norm is a low finding, hidden by default; the NaN that began there
    is the evidence it lacked, so the event names it."""
    mod = load_module(tmp_path / "row_norm.py", ROW_NORM, "numlint_test_row_norm")
    model = nn.Sequential(mod.RowNorm())
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, log=None):
            model(torch.zeros(2, 4))
    static = info.value.event["static"]
    assert [(s["code"], s["confidence"]) for s in static] == [("NUM202", "low")]
