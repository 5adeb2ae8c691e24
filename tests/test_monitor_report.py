"""`numlint report EVENTS.jsonl -o report.png`: a PNG and a text summary; bad input exits 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from numlint.monitor.report import main

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def base(event: str, **fields: object) -> dict[str, object]:
    keys = ("step", "iteration", "phase", "module", "kind", "nan_count", "inf_count", "dtype")
    keys += ("shape", "min", "max", "mean", "absmax", "rank", "origin")
    ev: dict[str, object] = dict.fromkeys(keys)
    ev.update(event=event, rank=0, **fields)
    return ev


def write_log(path: Path) -> Path:
    events = [base("step", step=i, iteration=i, grad_norm=1.0 + 0.1 * i) for i in range(1, 6)]
    events.append(base("amp_overflow_skip", step=5, iteration=6, scale=32768.0, loss=0.5))
    events += [base("step", step=i - 1, iteration=i, grad_norm=1.2) for i in range(7, 10)]
    events.append(base("grad_explosion", step=8, iteration=9, grad_norm=90.0, ratio=75.0))
    events.append(
        base(
            "nonfinite",
            step=8,
            iteration=9,
            phase="forward",
            module="encoder.layers.2.attn",
            kind="nan",
            nan_count=3,
            inf_count=0,
            dtype="float32",
            shape=[8, 16],
            origin=True,
            static=[{"code": "NUM101", "location": "model.py:42", "message": "log of softmax"}],
            snapshot="numlint-events.snapshot.pt",
        )
    )
    events.append(base("nonfinite", step=8, iteration=9, phase="forward", module="head"))
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_report_writes_a_png_and_a_summary(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    log = write_log(tmp_path / "events.jsonl")
    png = tmp_path / "out" / "report.png"
    assert main([str(log), "-o", str(png)]) == 0
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 5000
    text = capsys.readouterr().out
    assert "steps: 8 logged" in text
    assert "1 skipped step" in text and "iteration 6" in text
    assert "gradient explosions: 1" in text
    assert "encoder.layers.2.attn" in text and "(origin)" in text and "NUM101 model.py:42" in text
    assert "numlint-events.snapshot.pt" in text


def test_report_without_plot_and_on_a_clean_log(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    log = tmp_path / "clean.jsonl"
    log.write_text(json.dumps(base("step", step=1, iteration=1, grad_norm="nan")) + "\n\n")
    assert main([str(log)]) == 0
    text = capsys.readouterr().out
    assert "first non-finite value: none" in text and "AMP: no skipped steps" in text
    assert not list(tmp_path.glob("*.png"))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ('{"event": "step"}\n{not json\n', ":2: not valid JSON"),
        ('["a list"]\n', ":1: not a numlint event"),
    ],
)
def test_bad_input_is_a_message_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture, content: str | None, message: str
) -> None:
    log = tmp_path / "events.jsonl"
    if content is not None:
        log.write_text(content)
    assert main([str(log), "-o", str(tmp_path / "r.png")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "r.png").exists()


def test_report_lists_every_incident_clipping_and_repeats(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    events = [
        base("step", step=i, iteration=i, grad_norm=5.0, grad_norm_clipped=1.0, max_norm=1.0)
        for i in range(1, 4)
    ]
    events[0]["loss"] = 2.0
    incident = {"phase": "forward", "kind": "nan", "origin": True, "nan_count": 1}
    events.append(base("nonfinite", step=1, iteration=1, module="<input>", incident=1, **incident))
    events.append(base("nonfinite", step=2, iteration=2, module="blk", incident=2, **incident))
    events.append(base("nonfinite_repeated", step=3, first_step=3, count=7, module="blk"))
    log = tmp_path / "events.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in events))
    png = tmp_path / "report.png"
    assert main([str(log), "-o", str(png)]) == 0
    text = capsys.readouterr().out
    assert "first non-finite value: step 1, forward of '<input>'" in text
    assert "then: step 2, forward of 'blk'" in text
    assert "repeated 7 more time(s)" in text
    assert "clipping: max_norm 1; 3 of 3 steps clipped" in text


def test_the_report_never_shows_a_finite_last_norm_over_nan_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    norms = [1.0, 0.5, 0.4715] + ["nan"] * 34
    events = [base("step", step=i, iteration=i, grad_norm=n) for i, n in enumerate(norms)]
    log = tmp_path / "ev.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in events))
    assert main([str(log)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("gradient norm"))
    assert "last nan" in line and "last 0.4715" not in line
    assert "max 1, " in line and "non-finite at 34 step(s): 3-36" in line


def test_one_step_numbering_in_the_log_the_report_and_the_plot(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    import numlint
    from numlint.monitor import report

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    log = tmp_path / "ev.jsonl"
    with numlint.watch(model, opt, log=log, action="record", static=False):
        for step in range(8):
            x = torch.randn(3, 4)
            if step == 5:
                x[1, 2] = float("nan")  # the batch of loop step 5
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
    events = [json.loads(line) for line in log.read_text().splitlines()]
    nan = next(e for e in events if e["event"] == "nonfinite" and e.get("origin"))
    steps = {e["step"]: e for e in events if e["event"] == "step"}
    assert nan["step"] == 5 and nan["iteration"] == 5  # as the loop counts
    assert sorted(steps) == list(range(8)) and steps[5]["iteration"] == 5
    summary = report.load(log)
    assert report._x(nan) == report._x(steps[5]) == 5.0  # drawn at the same iteration
    assert "first non-finite value: step 5," in report.text_summary(summary)
