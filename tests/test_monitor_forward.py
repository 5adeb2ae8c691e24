"""Monitor, forward phase: the first NaN/Inf at its origin module, nested outputs, actions,
hook removal, the event log and the static tie-back."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import pytest
from conftest import HEAD_WITH_FINDING, load_module

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import numlint  # noqa: E402
from numlint.monitor import Monitor, NonFiniteError  # noqa: E402
from numlint.monitor.events import BASE_KEYS  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class LogOfLinear(nn.Module):
    """Finite inputs, NaN output wherever the linear map goes negative."""

    def __init__(self, n: int = 8) -> None:
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(self.lin(x))


class Block(nn.Module):
    def __init__(self, bad: bool) -> None:
        super().__init__()
        self.inner = LogOfLinear() if bad else nn.Linear(8, 8)
        self.act = nn.Tanh()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.inner(x))


def make_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), Block(False), Block(True), Block(False), nn.Linear(8, 2))


def train(model: nn.Module, steps: int = 2, x: torch.Tensor | None = None) -> None:
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        out = model(x if x is not None else torch.randn(16, 4))
        out.pow(2).mean().backward()
        opt.step()
        opt.zero_grad()


def test_first_nan_is_located_at_its_origin_module(tmp_path: Path) -> None:
    model = make_model()
    log = tmp_path / "events.jsonl"
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, log=log):
            train(model)
    err = info.value
    ev = err.event
    assert ev["event"] == "nonfinite"
    assert ev["phase"] == "forward"
    assert ev["module"] == "2.inner"  # where the log was taken, not where it surfaced
    assert ev["origin"] is True
    assert ev["kind"] == "nan" and ev["nan_count"] > 0 and ev["inf_count"] == 0
    assert ev["dtype"] == "float32" and ev["shape"] == [16, 8]
    assert ev["step"] == 0 and ev["rank"] == 0
    assert ev["min"] is not None and ev["min"] <= ev["mean"] <= ev["max"]
    assert ev["absmax"] == max(abs(ev["min"]), abs(ev["max"]))
    by_module = {e["module"]: e for e in err.events}
    # Downstream modules saw the NaN but did not make it.
    for downstream in ("2.act", "2", "3.inner", "3", "4"):
        assert by_module[downstream]["origin"] is False, downstream
    # Upstream modules were finite and are not reported.
    assert "0" not in by_module and "1.inner" not in by_module
    assert [e["origin"] for e in err.events].count(True) == 1
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert lines and all(set(BASE_KEYS) <= set(line) for line in lines)
    assert lines[0]["module"] == "2.inner"


def test_inf_is_detected_not_only_nan() -> None:
    torch.manual_seed(0)

    class Exp(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.exp(x * 100.0)

    model = nn.Sequential(nn.Linear(4, 4), Exp(), nn.Linear(4, 1))
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, log=None):
            model(torch.full((2, 4), 3.0))
    ev = info.value.event
    assert ev["module"] == "1" and ev["origin"] is True
    assert ev["kind"] == "inf" and ev["inf_count"] > 0 and ev["nan_count"] == 0


@dataclasses.dataclass
class Out:
    logits: torch.Tensor
    extra: dict


class Nested(nn.Module):
    """Returns tensors inside a dataclass, a dict and a tuple."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> Out:
        h = self.lin(x)
        return Out(logits=h, extra={"pair": (h.sum(), torch.sqrt(h))})


def test_tensors_inside_dataclasses_dicts_and_tuples_are_checked() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(Nested())
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, log=None):
            model(torch.randn(8, 4))
    ev = info.value.event
    assert ev["module"] == "0" and ev["origin"] is True
    assert ev["tensor"] == "output.extra.pair[1]"


def test_nan_in_the_batch_is_reported_as_the_input() -> None:
    model = make_model()
    x = torch.randn(4, 4)
    x[1, 2] = float("nan")
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, log=None):
            model(x)
    ev = info.value.event
    assert ev["module"] == "<input>" and ev["origin"] is True and ev["nan_count"] == 1
    assert all(not e["origin"] for e in info.value.events[1:])


def test_hooks_are_removed_on_exit_and_after_an_exception() -> None:
    model = make_model()
    before = {
        n: len(m._forward_hooks) + len(m._forward_pre_hooks) for n, m in model.named_modules()
    }
    monitor = numlint.watch(model, log=None)
    with pytest.raises(NonFiniteError):
        with monitor:
            assert len(model[0]._forward_hooks) == 1
            train(model)
    after = {n: len(m._forward_hooks) + len(m._forward_pre_hooks) for n, m in model.named_modules()}
    assert after == before
    assert not monitor.active
    with pytest.raises(ZeroDivisionError):
        with numlint.watch(model, log=None):
            1 / 0  # noqa: B018
    assert {n: len(m._forward_hooks) for n, m in model.named_modules()} == {
        n: 0 for n, _ in model.named_modules()
    }
    model(torch.randn(2, 4))  # NaN, but nobody is watching any more: no error


def test_warn_and_record_actions_do_not_raise() -> None:
    model = make_model()
    with pytest.warns(numlint.monitor.NumlintWarning, match="2.inner"):
        with numlint.watch(model, log=None, action="warn"):
            model(torch.randn(4, 4))
    monitor = numlint.watch(model, log=None, action="record")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with monitor:
            model(torch.randn(4, 4))
            model(torch.randn(4, 4))
    origins = [e for e in monitor.events if e["event"] == "nonfinite" and e["origin"]]
    assert len(origins) == 1  # the same incident twice: logged once, then counted
    (repeat,) = [e for e in monitor.events if e["event"] == "nonfinite_repeated"]
    assert repeat["count"] == 1 and repeat["module"] == "2.inner"
    assert isinstance(monitor.snapshot, dict)  # no log file: the snapshot stays in memory


def test_ring_buffer_is_bounded_and_jsonl_lines_are_valid(tmp_path: Path) -> None:
    model = make_model()
    log = tmp_path / "ev.jsonl"
    monitor = numlint.watch(model, log=log, action="record", max_events=5)
    with monitor:
        for _ in range(10):
            model(torch.randn(4, 4))
    assert len(monitor.events) == 5
    lines = log.read_text().splitlines()
    assert len(lines) > 5  # the file keeps everything, memory only the last 5
    for line in lines:
        event = json.loads(line)  # strict JSON: no NaN/Infinity tokens
        assert set(BASE_KEYS) <= set(event)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="action"):
        numlint.watch(nn.Linear(2, 2), action="explode")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        numlint.watch(lambda x: x)  # type: ignore[arg-type]
    assert isinstance(numlint.watch(nn.Linear(2, 2), log=None), Monitor)


def test_origin_event_lists_static_findings_of_its_source_file(tmp_path: Path) -> None:
    path = tmp_path / "head_model.py"
    mod = load_module(path, HEAD_WITH_FINDING, "head_model_for_tieback")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), mod.Head())
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, log=None):
            model(torch.randn(8, 4) * 10)
    ev = info.value.event
    assert ev["module"] == "1" and ev["origin"] and ev["kind"] == "inf"
    codes = {(s["code"], s["location"]) for s in ev["static"]}
    assert ("NUM101", f"{path}:12") in codes
    assert "NUM101" in str(info.value)


def test_event_log_is_thread_safe(tmp_path: Path) -> None:
    import threading

    from numlint.monitor.events import EventLog, make_event

    log = EventLog(tmp_path / "threads.jsonl", maxlen=100)
    log.open()

    def writer(k: int) -> None:
        for i in range(200):
            log.emit(make_event("step", step=i, rank=k, grad_norm=float(i), payload="x" * 300))

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log.close()
    lines = (tmp_path / "threads.jsonl").read_text().splitlines()
    assert len(lines) == 1600 and len(log.events) == 100
    assert sorted((e["rank"], e["step"]) for e in map(json.loads, lines)) == sorted(
        (k, i) for k in range(8) for i in range(200)
    )


def test_ignored_modules_may_output_inf() -> None:
    class MaskBuilder(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.full_like(x, float("-inf")).triu(1)

    class Attn(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mask = MaskBuilder()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.softmax(x + self.mask(x), -1)

    model = nn.Sequential(nn.Linear(4, 4), Attn())
    with numlint.watch(model, log=None, ignore=["*.mask"]):
        model(torch.randn(4, 4))  # -inf by design inside the mask: no error
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, log=None, static=False):
            model(torch.randn(4, 4))
    assert info.value.event["module"] == "1.mask" and info.value.event["kind"] == "inf"


def test_model_computing_its_own_loss_reports_the_loss_phase() -> None:
    from collections import OrderedDict

    class WithLoss(nn.Module):  # Hugging Face style: ModelOutput is an OrderedDict
        def __init__(self) -> None:
            super().__init__()
            self.head = nn.Linear(4, 3)

        def forward(self, x: torch.Tensor, labels: torch.Tensor) -> OrderedDict:
            logits = self.head(x)
            probs = torch.softmax(logits * 1e4, -1)
            loss = -torch.log(probs.gather(1, labels[:, None])).mean()  # log(0) = -inf
            return OrderedDict(loss=loss, logits=logits)

    torch.manual_seed(0)
    model = WithLoss()
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, log=None, static=False):
            model(torch.randn(8, 4), labels=torch.zeros(8, dtype=torch.long))
    ev = info.value.event
    assert ev["phase"] == "loss" and ev["module"] == "" and ev["tensor"] == "output.loss"
    assert ev["kind"] == "inf" and ev["origin"] is True


def test_flags_deferred_through_propagating_modules_still_catch_the_origin() -> None:
    # Linear -> LayerNorm -> ReLU -> Linear: the first Linear's flag is left to LayerNorm's
    # (a NaN/Inf in its input reaches its output); the exact re-run still names the Linear.
    torch.manual_seed(0)

    class Overflow(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * 1e38

    model = nn.Sequential(Overflow(), nn.Linear(4, 8), nn.LayerNorm(8), nn.ReLU(), nn.Linear(8, 2))
    with torch.no_grad():
        model[1].weight.fill_(10.0)
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, log=None, static=False):
            model(torch.ones(3, 4))
    ev = info.value.event
    assert ev["module"] == "1" and ev["origin"] is True and ev["kind"] == "inf"
    assert {e["module"] for e in info.value.events} >= {"1", "2", "4", ""}


def test_a_tensor_changed_in_place_between_modules_is_flagged_as_it_is_now() -> None:
    class Sanitise(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.a(x)
            h.clamp_(-1.0, 1.0)  # in place between two modules
            return self.b(h)

    model = Sanitise()
    with numlint.watch(model, log=None):
        model(torch.randn(2, 4))  # finite all along: no error
    with torch.no_grad():
        model.b.bias.fill_(float("nan"))
    with pytest.raises(NonFiniteError) as info:
        with numlint.watch(model, log=None, static=False):
            model(torch.randn(2, 4))
    assert info.value.event["phase"] == "param" and info.value.event["module"] == "b.bias"
