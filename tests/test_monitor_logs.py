"""Bounded logs: the JSONL file rotates past its size bound; identical incidents are counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import numlint  # noqa: E402
from numlint.monitor.events import EventLog, make_event  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_log_file_rotates_past_its_size_bound(tmp_path: Path) -> None:
    path = tmp_path / "ev.jsonl"
    log = EventLog(path, max_bytes=2000)
    log.open()
    for i in range(200):
        log.emit(make_event("step", step=i, grad_norm=1.0))
        log.flush()
    log.close()
    old = tmp_path / "ev.jsonl.1"
    assert path.stat().st_size <= 2600 and old.stat().st_size <= 2600
    steps = [json.loads(line)["step"] for line in old.read_text().splitlines()]
    steps += [json.loads(line)["step"] for line in path.read_text().splitlines()]
    assert steps == list(range(steps[0], 200))  # the newest events, in order, none lost


def test_monitor_bounds_its_log(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    path = tmp_path / "ev.jsonl"
    with numlint.watch(model, opt, log=path, max_log_bytes=4000):
        for _ in range(200):
            model(torch.randn(2, 4)).sum().backward()
            opt.step()
            opt.zero_grad()
    assert path.stat().st_size < 8000 and (tmp_path / "ev.jsonl.1").exists()


def test_a_nan_left_in_the_weights_is_logged_once_with_a_count(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with torch.no_grad():
        model[1].weight[0, 0] = float("nan")
    monitor = numlint.watch(model, opt, log=tmp_path / "ev.jsonl", action="record")
    with monitor:
        for _ in range(50):
            model(torch.randn(2, 4)).sum().backward()
            opt.step()
            opt.zero_grad()
    errors = [e for e in monitor.events if e["event"] == "nonfinite"]
    assert len({e["incident"] for e in errors}) <= 2
    (repeat,) = [e for e in monitor.events if e["event"] == "nonfinite_repeated"]
    assert repeat["count"] >= 45 and repeat["first_step"] < repeat["step"]


@pytest.mark.parametrize(
    "values",
    [
        {"grad_norm": 0.8634519457817078, "loss": 2.302585, "scale": None, "time": 1764166000.1},
        {"grad_norm": float("inf"), "loss": float("nan"), "scale": 65536.0, "time": 2},
        {"grad_norm": 1e-300, "loss": float("-inf"), "scale": None, "time": 0.5},
    ],
)
def test_step_events_are_written_as_json_writes_them(values: dict[str, object]) -> None:
    # Every completed step logs one event: its line comes from a template (the slow path is
    # json.dumps), byte for byte the same, non-finite values as strings included.
    from numlint.monitor.events import StepRecord, _json_safe, step_event, to_json_line

    def reference(event: dict[str, object]) -> str:
        return json.dumps(_json_safe(event), allow_nan=False, separators=(",", ":"))

    event = make_event("step", **values, step=10**12, iteration=3, rank=1)
    assert to_json_line(event) == reference(event)
    made = step_event(10**12, 3, 1, *values.values())  # (the one made every step)
    assert made == event and list(made) == list(event)
    record = StepRecord((10**12, 3, 1, *values.values()))  # (what the log keeps of it)
    assert record.line() == reference(event) and record.event() == event
    clipped = make_event("step", **values, step=1, iteration=1, rank=0, grad_norm_clipped=0.5)
    other = dict(event, phase="grad")  # a key the template writes as null
    strange = dict(event, step=True)  # a bool is no number of the template
    for e in (clipped, other, strange):
        assert to_json_line(e) == reference(e)
        assert json.loads(to_json_line(e)) == json.loads(reference(e))
