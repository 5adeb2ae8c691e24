"""Snapshots and replay: the failing step re-run with per-op checks names the aten op and the
user's source line (forward, backward and loss), and lists static findings for that file."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from conftest import HEAD_WITH_FINDING, load_module

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import numlint  # noqa: E402
from numlint.monitor import NonFiniteError  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def line_of(obj: object, needle: str) -> int:
    lines, start = inspect.getsourcelines(obj)  # type: ignore[arg-type]
    return start + next(i for i, line in enumerate(lines) if needle in line)


class LogLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.drop = nn.Dropout(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.drop(self.lin(x))  # dropout: replay must restore the RNG to match
        return torch.log(h)


class RowNorm(nn.Module):
    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return torch.sqrt((h**2).sum(-1, keepdim=True)) * h


def fail_and_snapshot(model: nn.Module, x: torch.Tensor, tmp_path: Path, **kw: object) -> Path:
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    log = tmp_path / "events.jsonl"
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, opt, log=log, static=False, **kw):
            for _ in range(3):
                opt.zero_grad()
                model(x).sum().backward()
                opt.step()
    snap = Path(info.value.snapshot)
    assert snap == tmp_path / "events.snapshot.pt" and snap.exists()
    assert info.value.event["snapshot"] == str(snap)
    return snap


def test_replay_names_the_aten_op_and_source_line_of_a_forward_nan(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), LogLayer(), nn.Linear(4, 1))
    snap = fail_and_snapshot(model, torch.randn(8, 4), tmp_path)
    data = torch.load(snap, weights_only=False)
    assert data["step"] == 0 and data["phase"] == "forward"
    assert data["event"]["module"] == "1" and data["args"][0].shape == (8, 4)

    torch.manual_seed(99)
    fresh = nn.Sequential(nn.Linear(4, 4), LogLayer(), nn.Linear(4, 1))
    rng_before = torch.get_rng_state()
    result = numlint.replay(snap, fresh, lambda out: out.sum())
    assert torch.equal(torch.get_rng_state(), rng_before)  # the caller's RNG is untouched
    assert result.found and result.phase == "forward"
    assert result.op == "aten::log" and result.kind == "nan"
    assert result.module == "1"
    assert result.source == f"{__file__}:{line_of(LogLayer.forward, 'torch.log(h)')}"
    assert result.code == "return torch.log(h)"
    assert result.output["nan_count"] == data["event"]["nan_count"]  # same dropout mask
    assert "aten::log" in str(result)


def test_replay_traces_a_backward_nan_to_its_forward_line(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), RowNorm(), nn.Linear(8, 1))
    with torch.no_grad():
        model[0].weight.zero_()
        model[0].bias.fill_(-1.0)  # ReLU output all zero: sqrt'(0) in backward
    # (the NaN gradient is dropped by the ReLU: only its flag, a module hook, shows it)
    snap = fail_and_snapshot(model, torch.randn(8, 4), tmp_path, module_hooks=True)
    assert torch.load(snap, weights_only=False)["phase"] == "backward"
    result = numlint.replay(snap, model)  # no loss_fn: seeded with the recorded output gradient
    assert result.found and result.phase == "backward"
    assert result.op is not None and result.op.startswith("aten::")
    assert result.autograd_node == "SqrtBackward0"
    assert result.source == f"{__file__}:{line_of(RowNorm.forward, 'torch.sqrt')}"
    assert result.module == "2"


def test_replay_of_the_loss_and_of_a_step_that_does_not_fail(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), LogLayer(), nn.Linear(4, 1))
    snap = fail_and_snapshot(model, torch.randn(8, 4), tmp_path)
    clean = numlint.replay(snap, nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 1)), strict=False)
    assert not clean.found and "did not reproduce" in str(clean)

    def loss_fn(out: torch.Tensor) -> torch.Tensor:
        return torch.log(out - out).sum()  # log(0)

    data = torch.load(snap, weights_only=False)
    data["model_state"]["1.lin.bias"] = torch.full((4,), 10.0)  # forward now finite
    data["training"] = False  # and no dropout zeros to take the log of
    result = numlint.replay(data, model, loss_fn)
    assert result.found and result.phase == "loss" and result.op == "aten::log"
    assert (
        result.module == "<loss>" and result.code == "return torch.log(out - out).sum()  # log(0)"
    )


def test_replay_lists_static_findings_at_the_line(tmp_path: Path) -> None:
    path = tmp_path / "replay_head.py"
    mod = load_module(path, HEAD_WITH_FINDING, "replay_head_model")
    torch.manual_seed(0)
    model = nn.Sequential(mod.Head())
    snap = fail_and_snapshot(model, torch.randn(8, 4) * 10, tmp_path)
    result = numlint.replay(snap, model)
    assert result.op == "aten::log" and result.source == f"{path}:12"
    assert any(s["code"] == "NUM101" and s["at_line"] for s in result.static)
