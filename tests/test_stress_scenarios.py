"""Stress scenarios on labels, masks and sequences, the loss function's own tensors, inputs that
stay within the dtype, and verdicts that never claim more than the runs reached."""

from __future__ import annotations

import functools

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

import numlint  # noqa: E402
from numlint.diagnostic import Diagnostic  # noqa: E402
from numlint.stress import scenarios as sc  # noqa: E402
from numlint.stress.lossfn import loss_inputs  # noqa: E402
from numlint.stress.roles import VARIES  # noqa: E402
from numlint.stress.verdict import annotate  # noqa: E402


def change(name: str, t: torch.Tensor, role: str) -> torch.Tensor | None:
    scenario = sc.BY_NAME[name]
    assert scenario.change is not None
    return scenario.change(t, role)


LABELS = torch.tensor([0, 1, 2, 3, 0, 1, 2, 3])


def test_label_scenarios_make_what_they_say_from_the_classes_present() -> None:
    once = change("a class once", LABELS, "labels")
    assert once is not None and int((once == int(once[0])).sum()) == 1
    assert set(once.tolist()) <= set(LABELS.tolist())
    one = change("one class", LABELS, "labels")
    assert one is not None and one.unique().tolist() == [0]
    missing = change("a class with no sample", LABELS, "labels")
    assert missing is not None and 0 not in missing.tolist()
    assert set(missing.tolist()) < set(LABELS.tolist())
    other = change("duplicates, other labels", LABELS, "labels")
    assert other is not None and bool((other[1::2] != other[0::2]).all())
    ignored = change("ignore_index everywhere", LABELS, "labels")
    assert ignored is not None and ignored.unique().tolist() == [-100]
    assert torch.equal(LABELS, torch.tensor([0, 1, 2, 3, 0, 1, 2, 3]))  # never in place


def test_ignored_entries_stay_ignored_and_one_class_cannot_be_made_once() -> None:
    token_labels = torch.tensor([[-100, -100, 4, 5], [-100, 6, 4, 4]])
    one = change("one class", token_labels, "labels")
    assert one is not None and (one == -100).sum() == 3
    assert one[one >= 0].unique().numel() == 1
    assert change("a class once", torch.tensor([2, 2, 2]), "labels") is None
    assert change("a class once", LABELS, "masks") is None  # not its role


def test_roles_of_integer_and_bool_tensors() -> None:
    assert sc.role(torch.tensor([0, 1, 1])) == "labels"
    assert sc.role(torch.randint(2, 9, (2, 5))) == "tokens"
    assert sc.role(torch.randint(2, 9, (2, 5)), loss_side=True) == "labels"
    assert sc.role(torch.ones(2, 5, dtype=torch.bool)) == "masks"
    assert sc.role(torch.tensor([[0, 1], [1, 1]])) == "masks"
    assert sc.role(torch.randn(3)) is None and sc.role(torch.tensor(3)) is None


def test_padding_and_masks_change_every_other_row() -> None:
    tokens = torch.randint(1, 9, (4, 5))
    padded = change("padding-only sequences", tokens, "tokens")
    assert padded is not None and padded[0::2].eq(0).all() and padded[1::2].ne(0).all()
    mask = torch.ones(4, 5, dtype=torch.bool)
    empty = change("empty masks", mask, "masks")
    assert empty is not None and not empty[0::2].any() and empty[1::2].all()
    full = change("full masks", torch.zeros(4, 5, dtype=torch.bool), "masks")
    assert full is not None and full[0::2].all() and not full[1::2].any()


def test_the_varies_table_matches_the_scenarios() -> None:
    assert {s.name: s.varies for s in sc.SCENARIOS} == VARIES


def test_a_scaled_input_stays_within_the_dtype() -> None:
    x = torch.full((2, 3), 10.0)
    limit = float(torch.finfo(torch.float16).max) ** 0.5 / 2
    big = sc.apply(sc.BY_NAME["scaled 1e4"], x, limit).detach()
    assert float(big.abs().max()) == pytest.approx(limit)
    assert bool(torch.isfinite(big.half() * big.half()).all())
    plain = sc.apply(sc.BY_NAME["scaled 1e4"], x, float(torch.finfo(torch.float32).max) ** 0.5)
    assert float(plain.detach().max()) == pytest.approx(1e5)


def test_no_incident_is_an_overflow_of_the_scenarios_own_input(one_torch_thread: None) -> None:
    model = nn.Linear(8, 4)
    with torch.no_grad():
        model.weight.fill_(1e-3)
    x = torch.randn(6, 8) * 4  # times 1e4 would be past float16's 65504
    report = numlint.stress(model, x, dtypes=["float16"], scenarios=["scaled 1e4"])
    assert report.ok, str(report)
    assert [r.status for r in report.runs] == ["ok"]


def test_the_loss_functions_own_tensors_are_found_and_replaced() -> None:
    labels = torch.tensor([0, 1, 0, 1])

    def supcon(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return out.sum() * y.sum()

    closure = loss_inputs(lambda out: supcon(out, labels))
    assert [v is labels for v in closure.values] == [True]
    swapped = closure.rebuild([torch.tensor([1, 1, 1, 1])])
    assert float(swapped(torch.ones(2))) == 8.0
    partial = loss_inputs(functools.partial(supcon, y=labels))
    assert partial.values[0] is labels
    assert float(partial.rebuild([torch.zeros(4, dtype=torch.long)])(torch.ones(2))) == 0.0
    assert loss_inputs(nn.MSELoss()).values == []


class Projector(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)


def per_class_mean(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    mask = (y[:, None] == y[None, :]).float() - torch.eye(len(y))
    return ((mask @ out).sum(1) / mask.sum(1)).sum()


def test_labels_in_a_lambda_are_varied_and_name_the_line(one_torch_thread: None) -> None:
    torch.manual_seed(0)
    y = torch.tensor([0, 1, 0, 1, 2, 2])  # every class twice: fine as given
    report = numlint.stress(
        Projector(),
        torch.randn(6, 4),
        loss_fn=lambda out: per_class_mean(out, y),
        dtypes=["float32"],
    )
    assert "labels" in report.roles and "labels" in report.varied()
    failed = {i.scenario for i in report.incidents}
    assert "a class once" in failed and "as given" not in failed
    (incident,) = [i for i in report.incidents if i.scenario == "a class once"]
    assert incident.module == "<loss>" and incident.op == "aten::div"
    assert incident.source.endswith(f"test_stress_scenarios.py:{_line('/ mask.sum(1)')}")
    assert torch.equal(y, torch.tensor([0, 1, 0, 1, 2, 2]))  # the caller's labels untouched


def _line(text: str) -> int:
    lines = open(__file__).read().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line and "_line(" not in line)


def _finding(path: str, row: int, code: str = "NUM202") -> Diagnostic:
    return Diagnostic(code, "x", "division by a sum", path, row, 5, row, 30, confidence="medium")


def test_a_finding_is_not_downgraded_by_runs_that_could_not_reach_it(
    one_torch_thread: None,
) -> None:
    torch.manual_seed(0)
    y = torch.tensor([0, 1, 0, 1, 2, 2])
    floats_only = [s.name for s in sc.SCENARIOS if s.roles == ()]
    report = numlint.stress(
        Projector(),
        torch.randn(6, 4),
        loss_fn=lambda out: per_class_mean(out, y),
        dtypes=["float32"],
        scenarios=floats_only,
    )
    assert report.ok and report.unvaried() == ["labels"]
    d = _finding(__file__, _line("/ mask.sum(1)"))
    (judged,) = annotate([d], report, {})
    assert judged.extra["stress"]["verdict"] == "not reached"
    assert "labels" in judged.extra["stress"]["evidence"]
    assert judged.confidence == "medium"  # kept: these runs say nothing of it
    # with the labels varied it is confirmed instead
    full = numlint.stress(
        Projector(),
        torch.randn(6, 4),
        loss_fn=lambda out: per_class_mean(out, y),
        dtypes=["float32"],
    )
    (judged,) = annotate([d], full, {})
    assert judged.extra["stress"]["verdict"] == "confirmed" and judged.confidence == "high"


def never_called(x: torch.Tensor) -> torch.Tensor:
    return x / x.sum()


class Branchy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)
        if h.shape[0] > 100:
            h = h / h.sum(-1, keepdim=True)
        return h


def test_a_line_that_never_ran_is_not_reached(one_torch_thread: None) -> None:
    torch.manual_seed(0)
    report = numlint.stress(Branchy(), torch.randn(4, 4), dtypes=["float32"])
    assert report.ok and report.lines is not None
    d = _finding(__file__, _line("h = h / h.sum(-1, keepdim=True)"))
    (judged,) = annotate([d], report, {})
    assert judged.extra["stress"]["verdict"] == "not reached"
    assert judged.confidence == "medium"
    ran = _finding(__file__, _line("h = self.lin(x)"))
    (judged,) = annotate([ran], report, {})
    assert judged.extra["stress"]["verdict"] == "not confirmed" and judged.confidence == "low"


def test_an_exception_in_the_loss_is_reported_once_where_raised(one_torch_thread: None) -> None:
    def to_numpy_mean(out: torch.Tensor) -> torch.Tensor:
        return torch.tensor(out.detach().numpy().mean()) + out.sum() * 0

    torch.manual_seed(0)
    report = numlint.stress(
        Projector(), torch.randn(4, 4), loss_fn=to_numpy_mean, dtypes=["float32", "bfloat16"]
    )
    assert report.incidents == []
    (error,) = report.errors
    assert error.module == "<loss>" and error.error.startswith("TypeError")
    assert error.source.endswith(f"test_stress_scenarios.py:{_line('out.detach().numpy()')}")
    assert {d for _, d in error.runs} == {"bfloat16"}
    assert str(report).count(error.error) == 1
