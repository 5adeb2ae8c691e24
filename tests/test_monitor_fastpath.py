"""Monitor fast path: which checks can be left out because another check covers them, when the
backward flags are read, what is released after a step, and the step log built in batches."""

from __future__ import annotations

import json
import math
import random
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import numlint  # noqa: E402
from numlint.monitor import NonFiniteError  # noqa: E402
from numlint.monitor.grads import ExplosionDetector  # noqa: E402
from numlint.monitor.hooks import BACKWARD_PROPAGATING, gradient_covered  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class RowNorm(nn.Module):
    """sqrt(sum(h**2)) * h: finite forward, NaN gradient for an all-zero row (0/0)."""

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return torch.sqrt((h**2).sum(-1, keepdim=True)) * h


def _instance(kind: type[nn.Module]) -> tuple[nn.Module, torch.Tensor]:
    """A module of `kind` and an input it accepts."""
    x = torch.randn(2, 3, 4, 4, 4)
    if kind is nn.Unflatten:
        return kind(1, (2, 2)), torch.randn(3, 4)
    if kind in (nn.Softmax, nn.LogSoftmax):
        return kind(-1), torch.randn(3, 4)
    if kind.__name__.startswith(("MaxPool", "AvgPool")):
        dims = int(kind.__name__[-2])
        return kind(2), x.flatten(0, 2 - dims + 1) if dims < 3 else x
    if kind.__name__.startswith("Adaptive"):
        dims = int(kind.__name__[-2])
        return kind(3), x.flatten(0, 2 - dims + 1) if dims < 3 else x
    if kind.__name__.startswith("Dropout") and kind is not nn.Dropout:
        dims = int(kind.__name__[-2])
        return kind(0.5), x.flatten(0, 2 - dims + 1) if dims < 3 else x
    return kind(), torch.randn(3, 4)


@pytest.mark.parametrize("kind", sorted(BACKWARD_PROPAGATING, key=lambda k: k.__name__))
def test_backward_propagating_modules_pass_any_nonfinite_gradient_on(kind: type) -> None:
    # The reason their output gradient needs no flag: a NaN or Inf anywhere in it reaches the
    # gradient of their input, which is checked.
    module, x0 = _instance(kind)
    module.train()
    for scale in (1.0, 1e30, -1e30):
        x = (x0 * scale).requires_grad_(True)
        for bad in (math.nan, math.inf, -math.inf):
            for pos in range(0, x.numel(), 7):
                torch.manual_seed(pos)
                out = module(x)
                g = torch.randn_like(out)
                g.view(-1)[pos % g.numel()] = bad
                (grad,) = torch.autograd.grad(out, x, g)
                assert not torch.isfinite(grad).all(), (kind.__name__, scale, bad, pos)


def test_relu_drops_a_nan_gradient_so_it_keeps_its_flag() -> None:
    assert nn.ReLU not in BACKWARD_PROPAGATING
    x = torch.tensor([-1.0, 2.0], requires_grad=True)
    (grad,) = torch.autograd.grad(torch.relu(x), x, torch.tensor([math.nan, 1.0]))
    assert torch.isfinite(grad).all()  # the NaN at the inactive unit is gone


def test_embedding_gradient_is_covered_by_its_weight_gradient_unless_padding_drops_it() -> None:
    assert gradient_covered(nn.Embedding(5, 3))
    assert not gradient_covered(nn.Embedding(5, 3, padding_idx=0))
    assert not gradient_covered(nn.Embedding(5, 3, sparse=True))
    emb = nn.Embedding(5, 3)
    out = emb(torch.tensor([[1, 2], [2, 4]]))
    g = torch.zeros_like(out)
    g[1, 1, 2] = math.inf
    out.backward(g)
    assert not torch.isfinite(emb.weight.grad).all()


def backward_flags(model: nn.Module, x: torch.Tensor) -> list[int]:
    """The modules whose output gradient got a flag in one backward pass (no step after)."""
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    monitor = numlint.watch(model, opt, log=None, module_hooks=True)
    with monitor:
        model(x).sum().backward()
        idx = list(monitor._rec.bidx)
    return sorted(idx)


def test_only_gradients_nothing_else_covers_get_a_flag() -> None:
    torch.manual_seed(0)
    cnn = nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1),  # 1: covered by its weight gradient
        nn.BatchNorm2d(4),  # 2: covered
        nn.ReLU(),  # 3: flagged (its backward drops a NaN at inactive units)
        nn.MaxPool2d(2),  # 4: passes a NaN on to the ReLU's flagged gradient
        nn.Flatten(),  # 5: passes it on to the pooling's
        nn.Dropout(0.1),  # 6: likewise
        nn.Linear(4 * 4 * 4, 3),  # 7: covered
        nn.Tanh(),  # 8: passes it on to the Linear's covered gradient
    )
    assert backward_flags(cnn, torch.randn(2, 3, 8, 8)) == [3]


def test_nonfinite_loss_gradient_at_a_linear_head_is_a_loss_event() -> None:
    # The head's output gradient has no flag (its weight gradient covers it): the check before
    # the step still tells a loss that did it from the model.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, opt, log=None, static=False):
            out = model(torch.randn(3, 4))
            torch.sqrt(out - out.detach()).sum().backward()  # sqrt(0): gradient inf
            opt.step()
    ev = info.value.event
    assert ev["phase"] == "loss" and ev["module"] == "<loss>" and ev["origin"]
    assert ev["gradient_of"] == "model output"
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def rownorm_model() -> nn.Module:
    """ReLU -> RowNorm: the gradient is NaN for a batch row whose ReLU outputs are all zero."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), RowNorm(), nn.Linear(8, 1))
    with torch.no_grad():
        model[0].weight.copy_(torch.ones(8, 4))
        model[0].bias.zero_()
    return model


def test_gradient_accumulation_names_the_micro_batch_that_broke() -> None:
    model = rownorm_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    good = torch.ones(4, 4)
    bad = good.clone()
    bad[2] = -1.0  # that row's ReLU outputs are all zero: NaN gradient in backward
    with pytest.raises(NonFiniteError) as info:  # (which the ReLU drops: only its flag shows it)
        with numlint.watch(model, opt, log=None, static=False, module_hooks=True):
            model(bad).sum().backward()  # read with the next check point: the next forward
            model(good).sum().backward()
            opt.step()
    ev = info.value.event
    assert ev["phase"] == "backward" and ev["module"] == "2" and ev["origin"] is True
    assert ev["step"] == 0


def test_a_backward_pass_not_followed_by_a_step_is_checked_on_exit() -> None:
    model = rownorm_model()
    bad = torch.ones(4, 4)
    bad[0] = -1.0
    with pytest.raises(NonFiniteError) as info:
        sgd = torch.optim.SGD(model.parameters(), lr=0.1)
        with numlint.watch(model, sgd, log=None, module_hooks=True):
            model(bad).sum().backward()
    assert info.value.event["phase"] == "backward" and info.value.event["module"] == "2"
    # an exception already on its way out is not replaced by a finding
    with pytest.raises(KeyError):
        with numlint.watch(model, torch.optim.SGD(model.parameters(), lr=0.1), log=None):
            model(bad).sum().backward()
            raise KeyError("user error")


def test_the_output_gradient_is_let_go_after_the_step() -> None:
    # Holding it into the next step would keep a large block (an LM head's) from the allocator.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    monitor = numlint.watch(model, opt, log=None, check_backward=True)  # (a hook keeps it)
    with monitor:
        model(torch.randn(5, 4)).sum().backward()
        assert monitor._rec.out_grads and monitor._rec.out_grads[0] is not None
        opt.step()
        assert monitor._rec.out_grads is None
        assert monitor.last_grad_norm is not None and monitor.last_grad_norm > 0


def test_step_events_are_built_in_order_with_the_other_events(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    log = tmp_path / "ev.jsonl"
    monitor = numlint.watch(model, opt, log=log, action="record", static=False)
    with monitor:
        for i in range(5):
            opt.zero_grad()
            x = torch.randn(3, 4)
            if i == 3:
                x[0, 0] = math.nan
            model(x).sum().backward()
            if i != 3:
                opt.step()
        assert [e["event"] for e in monitor.events][:4] == ["step"] * 3 + ["nonfinite"]
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    kinds = [(e["event"], e["step"]) for e in lines if e["event"] in ("step", "nonfinite")]
    # one numbering: the optimizer step an event belongs to, from 0; the NaN batch's step was
    # dropped, so the next batch takes step 3
    assert kinds[:3] == [("step", 0), ("step", 1), ("step", 2)]
    assert kinds[3] == ("nonfinite", 3) and kinds[-1] == ("step", 3)
    assert all(isinstance(e["time"], float) for e in lines)
    assert lines == [json.loads(json.dumps(e)) for e in monitor.events]


def test_running_median_matches_statistics_median() -> None:
    rng = random.Random(0)
    det = ExplosionDetector(factor=3.0, window=7, warmup=3)
    seen: list[float] = []
    for _ in range(200):
        v = rng.choice([rng.random(), rng.random() * 10, 0.5, math.nan, math.inf])
        expected = None
        finite = [x for x in seen if math.isfinite(x)][-7:]
        if math.isfinite(v) and len(finite) >= 3:
            med = statistics.median(finite)
            expected = med if med > 0 and v > 3.0 * med else None
        assert det.update(v) == expected
        seen.append(v)


def test_events_of_a_monitor_never_stopped_reach_the_file_at_exit(tmp_path: Path) -> None:
    log = tmp_path / "ev.jsonl"
    script = textwrap.dedent(
        f"""
        import torch, numlint
        model = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        numlint.watch(model, opt, log={str(log)!r}).start()
        for _ in range(3):
            opt.zero_grad()
            model(torch.randn(2, 3)).sum().backward()
            opt.step()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    steps = [json.loads(line)["step"] for line in log.read_text().splitlines()]
    assert steps == [0, 1, 2]


class Poison(nn.Module):
    """Identity, except at call number `at` (counted from 0): NaN in one row, or an -inf that
    the caller masks away (a hidden non-finite value: only this module's own flag shows it)."""

    def __init__(self, at: int, value: float) -> None:
        super().__init__()
        self.at, self.value, self.calls = at, value, 0

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls - 1 != self.at:
            return h
        out = h.clone()
        out[0, 0] = self.value
        return out


class Masked(nn.Module):
    """Feeds its input through `inner` and keeps only the columns the mask lets through."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        keep = torch.ones_like(h, dtype=torch.bool)
        keep[:, 0] = False
        return torch.where(keep, self.inner(h), 0.0)


@pytest.mark.parametrize(
    ("value", "module", "hidden"),
    [(math.nan, "2", False), (-math.inf, "2.inner", True)],
)
def test_the_per_step_check_finds_the_first_nonfinite_output_at_its_layer_and_step(
    tmp_path: Path, value: float, module: str, hidden: bool
) -> None:
    # A training loop whose forward flags are read once per step, with the step's other values:
    # a NaN (or an -inf no later value shows) in step 7 is reported there, at its module, and
    # the weights are left as step 6 made them.
    torch.manual_seed(0)
    poison = Poison(at=7, value=value)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), Masked(poison) if hidden else poison)
    model.append(nn.Linear(8, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    log = tmp_path / "ev.jsonl"
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, opt, log=log, static=False, module_hooks=True):
            for _ in range(12):
                opt.zero_grad()
                model(torch.randn(5, 4)).square().mean().backward()
                before = [p.detach().clone() for p in model.parameters()]
                opt.step()
    ev = info.value.event
    assert (ev["step"], ev["module"], ev["phase"]) == (7, module, "forward")
    assert ev["kind"] == ("nan" if math.isnan(value) else "inf")
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    steps = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["step"] for e in steps if e["event"] == "step"] == list(range(7))


def test_the_per_step_check_finds_the_first_nonfinite_gradient_at_its_layer_and_step() -> None:
    model = rownorm_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    good = torch.ones(4, 4)
    bad = good.clone()
    bad[1] = -1.0  # that row's ReLU outputs are all zero: NaN gradient out of RowNorm
    with pytest.raises(NonFiniteError) as info:  # (dropped by the ReLU: its flag shows it)
        with numlint.watch(model, opt, log=None, static=False, module_hooks=True):
            for i in range(10):
                opt.zero_grad()
                model(bad if i == 5 else good).sum().backward()
                opt.step()
    ev = info.value.event
    assert (ev["step"], ev["module"], ev["phase"]) == (5, "2", "backward")


def test_checks_with_nothing_to_watch_are_left_out_of_every_step() -> None:
    # One process, no DDP, no FSDP2, no GradScaler: those checks are never called.
    model = nn.Linear(3, 1)
    monitor = numlint.watch(model, torch.optim.SGD(model.parameters(), lr=0.1), log=None)
    with monitor:
        idle = {"BucketCheck", "ShardCheck", "AmpCheck"}
        assert {type(c).__name__ for c in monitor.checks if not c.active} == idle
        called = {type(c).__name__ for cs in monitor._at.values() for c in cs}
        called |= {type(c).__name__ for c in monitor._on_step_done}
        assert not called & idle


def test_a_flags_only_check_is_judged_only_when_a_value_is_not_finite(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from numlint.monitor.checks.forward import ForwardCheck

    judged: list[list[float]] = []
    judge = ForwardCheck.judge

    def spy(self: ForwardCheck, values: list[float], point: str) -> int:
        judged.append(values)
        return judge(self, values, point)  # type: ignore[arg-type]

    monkeypatch.setattr(ForwardCheck, "judge", spy)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, opt, log=None, static=False, module_hooks=True):
            for i in range(4):
                opt.zero_grad()
                x = torch.randn(2, 3)
                if i == 3:
                    x[0, 0] = math.inf  # every later value is NaN or Inf as well
                model(x).sum().backward()
                opt.step()
    assert len(judged) == 1 and not all(map(math.isfinite, judged[0]))
    ev = info.value.event
    assert (ev["step"], ev["module"], ev["phase"]) == (3, "<input>", "forward")


class Sqrt(nn.Module):
    """sqrt of its input: NaN for a negative input value (one that a re-run reproduces)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(x)


def test_without_module_hooks_a_nan_that_reaches_the_output_is_still_named_at_its_layer() -> None:
    # module_hooks=False: no hook on any submodule. The NaN shows in the model output at the
    # step it happens, and re-running that step names the module where it began.
    torch.manual_seed(0)
    model = nn.Sequential(Sqrt(), nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    monitor = numlint.watch(model, opt, log=None, static=False, module_hooks=False)
    with pytest.raises(NonFiniteError) as info:
        with monitor:
            assert not any(m._forward_hooks for m in model)  # (the model's own only)
            for i in range(6):
                opt.zero_grad()
                x = torch.rand(5, 4)
                if i == 3:
                    x[1, 2] = -1.0
                model(x).square().mean().backward()
                opt.step()
    ev = info.value.event
    assert (ev["step"], ev["module"], ev["phase"], ev["origin"]) == (3, "0", "forward", True)


def test_without_module_hooks_a_value_a_later_op_hides_is_missed() -> None:
    # What the per-module flags are for: an -inf masked away before the output.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), Masked(Poison(at=3, value=-math.inf)))
    model.append(nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with numlint.watch(model, opt, log=None, static=False, module_hooks=False) as monitor:
        for _ in range(6):
            opt.zero_grad()
            model(torch.randn(5, 4)).square().mean().backward()
            opt.step()
    assert monitor.incidents == 0 and monitor.step == 6


def test_a_training_step_is_lean_by_default_and_the_call_slot_is_given_back() -> None:
    # Given its optimizer, the monitor hooks no submodule and reads the loss and the gradient
    # norms once per step; it watches the model's forward through the model's call slot, which
    # a copy or a pickle of the model does not take along, and which it gives back on exit.
    import copy
    import pickle

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    monitor = numlint.watch(model, opt, log=None)
    assert not monitor.module_hooks and not monitor.check_backward
    with monitor:
        assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())
        assert model.__dict__.get("_compiled_call_impl") is not None
        for _ in range(3):
            opt.zero_grad()
            model(torch.randn(5, 4)).square().mean().backward()
            opt.step()
        twin = copy.deepcopy(model)
        assert "_compiled_call_impl" not in twin.__dict__
        assert "_compiled_call_impl" not in pickle.loads(pickle.dumps(model)).__dict__
        twin(torch.randn(5, 4))  # (its own forward, not watched)
        assert monitor.step == 3 and monitor.micro == 0
    assert "_compiled_call_impl" not in model.__dict__
    assert [e["step"] for e in monitor.events if e["event"] == "step"] == [0, 1, 2]
    assert monitor.rng is not None and monitor.rng.cpu is None  # (it draws no random number)
    assert numlint.watch(model, log=None).module_hooks  # (no optimizer: one pass, flagged)
    dropped = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.1), nn.Linear(8, 2))
    with numlint.watch(dropped, torch.optim.SGD(dropped.parameters(), lr=0.1), log=None) as mon:
        dropped(torch.randn(5, 4))
        assert mon.rng is not None and mon.rng.cpu is not None  # (kept to re-run the mask)


def test_a_taken_call_slot_falls_back_to_forward_hooks() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(Sqrt(), nn.Linear(4, 2))
    model._compiled_call_impl = model._call_impl  # (as Module.compile() takes it)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, opt, log=None, static=False):
            assert model._forward_pre_hooks and model._forward_hooks
            x = torch.rand(3, 4)
            x[0, 0] = -1.0
            model(x).sum().backward()
            opt.step()
    assert (info.value.event["module"], info.value.event["phase"]) == ("0", "forward")
    assert not model._forward_pre_hooks and not model._forward_hooks
    assert model.__dict__["_compiled_call_impl"] == model._call_impl


def test_a_lean_step_names_a_nan_that_does_not_happen_again_at_the_model_output() -> None:
    # Re-running the step finds nothing (the NaN came from a stateful module): without module
    # flags the step is still stopped, and the NaN is reported where the loss read it.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), Poison(at=2, value=math.nan))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, opt, log=None, static=False):
            for _ in range(4):
                opt.zero_grad()
                model(torch.randn(5, 4)).square().mean().backward()
                before = [p.detach().clone() for p in model.parameters()]
                opt.step()
    ev = info.value.event
    assert (ev["step"], ev["module"], ev["phase"], ev["kind"]) == (2, "", "forward", "nan")
    assert ev["reproduced"] is False
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_a_lean_step_works_out_the_gradient_at_the_model_output_from_the_loss() -> None:
    # No hook kept the gradient the loss sent back to the model: the failure path computes it
    # again from the loss expression, and tells a loss that made it from the model.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    monitor = numlint.watch(model, opt, log=None, static=False)
    with pytest.raises(NonFiniteError) as info:
        with monitor:
            out = model(torch.randn(3, 4))
            loss = torch.sqrt(out - out.detach()).sum()  # sqrt(0): gradient inf
            loss.backward()
            assert monitor._rec.out_grads is None  # (nothing kept)
            opt.step()
    ev = info.value.event
    assert ev["phase"] == "loss" and ev["module"] == "<loss>" and ev["origin"]
    assert ev["gradient_of"] == "model output" and ev["loss_finite"] is True


def test_a_lean_step_logs_explosions_and_all_zero_gradients_at_their_step(
    tmp_path: Path,
) -> None:
    # A lean step is recorded where it is read, before optimizer.step: the explosion and the
    # all-zero gradients it shows are numbered with that step, and the file says what the
    # events say.
    class Two(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Linear(4, 2)
            self.dead = nn.Linear(4, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.body(x) + 0.0 * self.dead(x)  # (dead's gradient: all zeros)

    torch.manual_seed(0)
    model = Two()
    groups = [
        {"params": model.body.parameters(), "name": "body"},
        {"params": model.dead.parameters(), "name": "dead"},
    ]
    opt = torch.optim.SGD(groups, lr=0.0)
    log = tmp_path / "ev.jsonl"
    monitor = numlint.watch(model, opt, log=log, explosion_factor=5.0, explosion_warmup=5)
    with monitor:
        assert monitor._fast is not None  # (the lean step)
        for i in range(12):
            opt.zero_grad()
            (model(torch.randn(8, 4)).sum() * (1000.0 if i == 10 else 1.0)).backward()
            opt.step()
    events = monitor.events
    assert [e["step"] for e in events if e["event"] == "step"] == list(range(12))
    assert [e["step"] for e in events if e["event"] == "grad_explosion"] == [10]
    vanishing = [e for e in events if e["event"] == "grad_vanishing"]
    assert [e["step"] for e in vanishing] == list(range(12))
    assert {e["group"] for e in vanishing} == {"dead"}
    assert monitor.last_grad_norm == [e for e in events if e["event"] == "step"][-1]["grad_norm"]
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert lines == [json.loads(json.dumps(e)) for e in events]
