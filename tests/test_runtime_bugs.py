"""Six public NaN bugs, reproduced in our own words as small training loops
(tests/fixtures/runtime_bugs/, each citing its report): the monitor stops at the batch that
makes the NaN and its first message names the op and the line, without `criterion=`; stress
finds each from an ordinary batch, with the loss given as a lambda, and links the static
finding on that line; `check --stress-report` then shows the finding by default."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from conftest import run_cli  # noqa: E402

import numlint  # noqa: E402

BUGS = Path(__file__).resolve().parent / "fixtures" / "runtime_bugs"


def load(name: str) -> ModuleType:
    """The fixture as an importable module (so that its classes have a source file)."""
    key = f"runtime_bug_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, BUGS / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


def bug_line(name: str) -> int:
    """The line the fixture marks as the hazard (`# expect: NUMxxx`)."""
    lines = (BUGS / f"{name}.py").read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if "# expect:" in line)


def code(name: str) -> str:
    """The rule the fixture's line expects."""
    lines = (BUGS / f"{name}.py").read_text().splitlines()
    return lines[bug_line(name) - 1].rsplit("# expect: ", 1)[1][:6]  # (NUM202(low): low)


def where(name: str) -> str:
    return f"{BUGS / name}.py:{bug_line(name)}"


#: What makes a batch of each loop bad, read from the batch itself (not from the fixture).
BAD: dict[str, Callable[..., bool]] = {
    "contrastive_sqrt": lambda x1, x2, same: bool((x1 == x2).all(1).any()),
    "supcon": lambda x, y: bool((torch.bincount(y) == 1).any()),
    "masked_mean": lambda noisy, clean, mask: bool((mask.flatten(1).sum(1) == 0).any()),
    "token_count": lambda tokens, labels: bool((labels != -100).sum() == 0),
    "negatives_sum": lambda x, y: bool((y == y[0]).all()),
    "mean_pool": lambda tokens, y: bool(((tokens != 0).sum(1) == 0).any()),
}
STEPS = 200


def first_bad(name: str) -> int:
    module = load(name)
    return next(k for k, batch in enumerate(module.batches(STEPS)) if BAD[name](*batch))


@pytest.mark.parametrize("name", sorted(BAD))
def test_the_monitor_names_the_op_and_line_where_the_nan_began(
    name: str, tmp_path: Path, one_torch_thread: None
) -> None:
    module = load(name)
    expected = first_bad(name)
    assert 0 < expected < STEPS  # ordinary batches before it: the loop trains first
    log = tmp_path / "events.jsonl"
    with pytest.raises(numlint.NonFiniteError) as info:
        module.train(STEPS, log=log)
    event = info.value.event
    assert event["step"] == expected
    assert event["op"].startswith("aten::") and event["source"] == where(name)
    message = str(info.value)
    assert f"made by {event['op']}" in message and where(name) in message
    assert [(s["code"], s["row"]) for s in event["static"]] == [(code(name), bug_line(name))]
    # the log and the report number the step the same way
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    steps = [e["step"] for e in lines if e["event"] == "step"]
    assert steps == list(range(expected))
    from numlint.monitor import report

    text = report.text_summary(report.load(log))
    assert f"first non-finite value: step {expected}," in text


def test_a_finite_loss_with_a_nan_gradient_is_said_as_such(one_torch_thread: None) -> None:
    module = load("contrastive_sqrt")
    with pytest.raises(numlint.NonFiniteError) as info:
        module.train(STEPS, log=None)
    event = info.value.event
    assert event["phase"] == "loss" and event["gradient_of"] == "model output"
    assert event["loss_finite"] is True and 0 < event["loss_value"] < 10
    assert event["autograd_node"] == "SqrtBackward0"
    message = str(info.value)
    assert "backward of the loss (origin: the loss finite" in message
    assert "the loss not" not in message


def test_a_nan_loss_names_its_line_and_keeps_the_targets_for_replay(
    tmp_path: Path, one_torch_thread: None
) -> None:
    module = load("supcon")
    with pytest.raises(numlint.NonFiniteError) as info:
        module.train(STEPS, log=tmp_path / "events.jsonl")
    message = str(info.value)
    assert message.startswith(f"numlint: first NaN at step {first_bad('supcon')}, the loss")
    assert "the model's outputs finite, the loss not" in message
    snapshot = info.value.snapshot
    model = module.Projector()
    without = numlint.replay(snapshot, model)
    assert not without.found and "the loss was not run" in str(without)
    assert "did not reproduce" not in str(without)
    again = numlint.replay(snapshot, model, lambda out, labels: module.supcon_loss(out, labels))
    assert again.found and again.phase == "loss" and again.source == where("supcon")


def _setups() -> dict[str, Callable[[ModuleType], tuple[Any, Any, Callable[[Any], Any]]]]:
    """Per bug: the model, an ordinary batch and the loss as a lambda over its targets."""

    def sqrt(m: ModuleType) -> tuple[Any, Any, Callable[[Any], Any]]:
        x1, x2, same = m.example_batch()
        return m.Encoder(), (x1, x2), lambda out: m.contrastive_loss(*out, same)

    def supcon(m: ModuleType) -> tuple[Any, Any, Callable[[Any], Any]]:
        x, y = m.example_batch()
        return m.Projector(), x, lambda out: m.supcon_loss(out, y)

    def masked(m: ModuleType) -> tuple[Any, Any, Callable[[Any], Any]]:
        noisy, clean, mask = m.example_batch()
        return m.Denoiser(), noisy, lambda out: m.masked_mse(out, clean, mask)

    def tokens(m: ModuleType) -> tuple[Any, Any, Callable[[Any], Any]]:
        ids, labels = m.example_batch()
        return m.TinyLM(), ids, lambda out: m.answer_loss(out, labels)

    def negatives(m: ModuleType) -> tuple[Any, Any, Callable[[Any], Any]]:
        x, y = m.example_batch()
        return m.Encoder(), x, lambda out: m.contrast_loss(out, y)

    def pool(m: ModuleType) -> tuple[Any, Any, Callable[[Any], Any]]:
        ids, y = m.example_batch()
        return m.Classifier(), ids, lambda out: F.cross_entropy(out, y)

    return {
        "contrastive_sqrt": sqrt,
        "supcon": supcon,
        "masked_mean": masked,
        "token_count": tokens,
        "negatives_sum": negatives,
        "mean_pool": pool,
    }


SETUPS = _setups()


@pytest.mark.parametrize("name", sorted(SETUPS))
def test_stress_finds_it_from_an_ordinary_batch(name: str, one_torch_thread: None) -> None:
    module = load(name)
    torch.manual_seed(0)
    model, inputs, loss_fn = SETUPS[name](module)
    report = numlint.stress(model, inputs, loss_fn=loss_fn, dtypes=["float32"])
    statuses = {r.scenario: r.status for r in report.runs}
    assert statuses["as given"] == "ok"  # the batch itself is ordinary
    hits = [i for i in report.incidents if i.source == where(name)]
    assert hits, str(report)
    for incident in hits:
        assert incident.op.startswith("aten::")
        assert [(f.code, f.row) for f in incident.findings] == [(code(name), bug_line(name))]


@pytest.mark.parametrize("name", ["contrastive_sqrt", "supcon"])
def test_the_stress_report_shows_the_finding_by_default(
    name: str, tmp_path: Path, one_torch_thread: None
) -> None:
    module = load(name)
    torch.manual_seed(0)
    model, inputs, loss_fn = SETUPS[name](module)
    report = numlint.stress(model, inputs, loss_fn=loss_fn, dtypes=["float32"])
    path = report.save(tmp_path / "stress.json")
    fixture = str(BUGS / f"{name}.py")
    plain = run_cli("check", "--no-cache", "--output-format", "json", fixture)
    shown = run_cli(
        "check", "--no-cache", "--output-format", "json", "--stress-report", str(path), fixture
    )
    assert shown.returncode == 1, shown.stderr
    before = {(d["code"], d["location"]["row"]) for d in json.loads(plain.stdout or "[]")}
    after = {(d["code"], d["location"]["row"]): d for d in json.loads(shown.stdout)}
    key = next(k for k in after if k[1] == bug_line(name))
    assert key not in before  # a low finding (test code) hidden by default ...
    assert after[key]["stress"]["verdict"] == "confirmed"  # ... shown once stress confirms it
    assert after[key]["confidence"] == "high"


def test_naming_the_loss_line_leaves_the_models_gradients_alone() -> None:
    """The failure path computes the loss again (calling the model, when the loss expression
    does) and runs its backward: no parameter's `.grad` is touched."""
    from numlint.monitor.lossrun import LossRun, locate

    w = torch.nn.Parameter(torch.ones(3))

    def run() -> torch.Tensor:
        return (2 * w).sum() + torch.sqrt(((w - w.detach()) ** 2).sum())

    info = locate(LossRun(run))
    assert info is not None and info["phase"] == "backward"
    assert info["node"] == "SqrtBackward0" and info["loss_finite"] is True
    assert w.grad is None
