"""numlint.stress on models with known hazards: which scenario and dtype break each one, where
the first NaN/Inf begins, which static finding it confirms; the model left bit-identical."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from conftest import load_module  # noqa: E402

import numlint  # noqa: E402
from numlint.stress import StressError, StressReport  # noqa: E402
from numlint.stress.report import StressReportError  # noqa: E402

# The models are written to a temporary file and imported from there: stress links their
# incidents to the static findings of that file (and numlint's own lint never sees them).
MODELS = """
import torch
import torch.nn.functional as F
from torch import nn


class RowNorm(nn.Module):
    def forward(self, x):
        return x / x.norm(dim=-1, keepdim=True)


class SafeRowNorm(nn.Module):
    def forward(self, x):
        return F.normalize(x, dim=-1, eps=1e-6)


class DefaultEpsRowNorm(nn.Module):
    def forward(self, x):
        return F.normalize(x, dim=-1)


class NormNet(nn.Module):
    def __init__(self, norm):
        super().__init__()
        self.proj = nn.Linear(8, 8, bias=False)
        self.norm = norm
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        return self.head(self.norm(self.proj(x)))


class LogSigmoid(nn.Module):
    def forward(self, x):
        return torch.log(torch.sigmoid(x))


class SafeLogSigmoid(nn.Module):
    def forward(self, x):
        return F.logsigmoid(x)


class ScoreNet(nn.Module):
    def __init__(self, act):
        super().__init__()
        self.lin = nn.Linear(8, 4)
        self.act = act

    def forward(self, x):
        return self.act(self.lin(x))


class PairDist(nn.Module):
    def forward(self, a):
        i, j = torch.triu_indices(len(a), len(a), 1)
        return ((a[i] - a[j]) ** 2).sum(-1).sqrt()


class SafePairDist(nn.Module):
    def forward(self, a):
        i, j = torch.triu_indices(len(a), len(a), 1)
        return ((a[i] - a[j]) ** 2).sum(-1).clamp_min(1e-6).sqrt()


class DistNet(nn.Module):
    def __init__(self, dist):
        super().__init__()
        self.embed = nn.Linear(8, 8)
        self.dist = dist

    def forward(self, x):
        return self.dist(self.embed(x))


class Blocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(8)
        self.drop = nn.Dropout(0.5)
        self.net = NormNet(RowNorm())

    def forward(self, x):
        return self.net(self.drop(self.bn(x)))
"""


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("stress") / "stress_models.py"
    return load_module(path, MODELS, "stress_models")


def _line(models, text: str) -> int:
    lines = Path(models.__file__).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


def _build(factory, seed: int = 0):
    torch.manual_seed(seed)
    return factory(), torch.randn(8, 8)


def _cases(report: StressReport) -> set[tuple[str, str]]:
    return {(i.scenario, i.dtype) for i in report.incidents}


def test_row_norm_breaks_on_zero_rows(models, one_torch_thread):
    model, x = _build(lambda: models.NormNet(models.RowNorm()))
    report = numlint.stress(model, x)
    assert not report.ok
    # float16 also flushes inputs scaled by 1e-8 to zero (its smallest value is 6e-8)
    assert _cases(report) == {
        ("zero rows", "float32"),
        ("zero rows", "float16"),
        ("zero rows", "bfloat16"),
        ("scaled 1e-8", "float16"),
    }
    row = _line(models, "x / x.norm(dim=-1, keepdim=True)")
    for i in report.incidents:
        assert (i.phase, i.module, i.kind) == ("forward", "norm", "nan")
        assert i.module_class == "stress_models.RowNorm"
        assert i.op == "aten::div" and i.source.endswith(f"stress_models.py:{row}")
        # a layer's input divided by its own norm: medium (numlint.analysis.evidence)
        assert [(f.code, f.row, f.confidence) for f in i.findings] == [("NUM202", row, "medium")]
        assert i.findings[0].text == "return x / x.norm(dim=-1, keepdim=True)"


def test_log_of_sigmoid_breaks_on_large_logits(models, one_torch_thread):
    model, x = _build(lambda: models.ScoreNet(models.LogSigmoid()))
    report = numlint.stress(model, x)
    # logits of 1e3 (or inputs of 1e4) put the sigmoid at exactly 0: log gives -inf, at every
    # dtype; float16 as given does not (its logits stay near 1)
    dtypes = ("float32", "float16", "bfloat16")
    assert _cases(report) == {(s, d) for s in ("large logits", "scaled 1e4") for d in dtypes}
    row = _line(models, "torch.log(torch.sigmoid(x))")
    for i in report.incidents:
        assert (i.phase, i.module, i.kind, i.op) == ("forward", "act", "inf", "aten::log")
        assert [(f.code, f.row) for f in i.findings] == [("NUM102", row)]


def test_pairwise_sqrt_breaks_on_duplicated_rows_in_backward(models, one_torch_thread):
    model, x = _build(lambda: models.DistNet(models.PairDist()))
    report = numlint.stress(model, x, dtypes=["float32"])
    # two equal rows (duplicated, or both zero) are at distance 0: the sqrt's gradient is NaN
    assert _cases(report) == {("duplicated rows", "float32"), ("zero rows", "float32")}
    row = _line(models, "((a[i] - a[j]) ** 2).sum(-1).sqrt()")
    for i in report.incidents:
        assert (i.phase, i.module, i.kind) == ("backward", "dist", "nan")
        assert [(f.code, f.row) for f in i.findings] == [("NUM201", row)]


@pytest.mark.parametrize(
    ("build", "dtypes"),
    [
        (lambda m: m.NormNet(m.SafeRowNorm()), ("float32", "bfloat16")),
        (lambda m: m.ScoreNet(m.SafeLogSigmoid()), ("float32", "float16", "bfloat16")),
        (lambda m: m.DistNet(m.SafePairDist()), ("float32", "bfloat16")),
    ],
    ids=["normalize", "logsigmoid", "clamped-sqrt"],
)
def test_safe_variants_are_ok(models, build, dtypes, one_torch_thread):
    model, x = _build(lambda: build(models))
    report = numlint.stress(model, x, dtypes=dtypes)
    assert report.ok, str(report)
    assert report.incidents == []
    assert {r.status for r in report.runs} == {"ok"}
    assert len(report.runs) == 6 * len(dtypes)


def test_float16_breaks_what_no_rule_flags(models, one_torch_thread):
    """F.normalize's default eps (1e-12) is 0 in float16: zero rows still give NaN there, with
    no static finding to link (stress reports it all the same)."""
    model, x = _build(lambda: models.NormNet(models.DefaultEpsRowNorm()))
    report = numlint.stress(model, x, dtypes=["float16"], scenarios=["zero rows"])
    assert [(i.scenario, i.module, i.findings) for i in report.incidents] == [
        ("zero rows", "norm", ())
    ]
    assert "(none in its code)" in str(report)


def _bits(t):
    """The tensor's bits (NaN payloads included) for a floating tensor, else the tensor."""
    t = t.detach()
    if not t.is_floating_point():
        return t
    return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def test_model_is_left_bit_identical(models, one_torch_thread):
    torch.manual_seed(0)
    model = models.Blocks()
    model.net.proj.weight.data[0, 0] = float("nan")  # a NaN payload must survive too
    model.net.head.weight.grad = torch.full_like(model.net.head.weight, 3.0)
    grad = model.net.head.weight.grad
    model.eval()
    model.net.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    modes = [m.training for m in model.modules()]
    x = torch.randn(8, 8)
    rng = torch.get_rng_state()
    report = numlint.stress(model, x)
    assert not report.ok  # the NaN weight makes every run fail
    for k, v in model.state_dict().items():
        assert torch.equal(_bits(v), _bits(before[k])), k
    assert [m.training for m in model.modules()] == modes
    assert model.net.head.weight.grad is grad and torch.equal(grad, torch.full_like(grad, 3.0))
    assert model.net.proj.weight.grad is None
    assert torch.equal(torch.get_rng_state(), rng)


def test_buffers_and_training_mode_restored(models, one_torch_thread):
    torch.manual_seed(0)
    model = models.Blocks().train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    numlint.stress(model, torch.randn(8, 8), dtypes=["float32"], scenarios=["as given"])
    assert model.training
    # BatchNorm's running statistics moved in the run and were put back
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k


def test_seed_drives_random_choices(one_torch_thread):
    """Each run is seeded with `seed`: a model whose random draw zeroes its input breaks as
    given exactly when that seed's first draw says so."""
    from torch import nn

    class Coin(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4, bias=False)

        def forward(self, x):
            h = self.lin(x) * (torch.rand(()) < 0.5)
            return h / h.norm(dim=-1, keepdim=True)  # noqa: NUM202 (the hazard under test)

    torch.manual_seed(0)
    model, x = Coin(), torch.randn(4, 4)
    outcomes = []
    for seed in range(8):
        torch.manual_seed(seed)
        expected = not bool(torch.rand(()) < 0.5)
        runs = [
            numlint.stress(model, x, dtypes=["float32"], scenarios=["as given"], seed=seed)
            for _ in range(2)
        ]
        assert [not r.ok for r in runs] == [expected, expected], seed
        outcomes.append(expected)
    assert len(set(outcomes)) == 2  # both outcomes occur: the seed decides


def test_inputs_structures_and_integer_tensors(one_torch_thread):
    from torch import nn

    class Embed(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 4)

        def forward(self, ids, mask):
            return self.emb(ids) * mask[..., None]

    torch.manual_seed(0)
    ids = torch.randint(0, 10, (4, 3))
    mask = torch.ones(4, 3)
    report = numlint.stress(Embed(), {"ids": ids, "mask": mask}, dtypes=["float32"])
    assert report.ok
    assert torch.equal(mask, torch.ones(4, 3))  # the caller's tensors are never changed
    report = numlint.stress(
        lambda_module(), (ids,), dtypes=["float32"], scenarios=["zero rows", "large logits"]
    )
    statuses = {r.scenario: (r.status, r.reason) for r in report.runs}
    assert statuses["zero rows"] == ("skipped", "no floating-point input to change")
    assert statuses["large logits"][0] == "ok"


def lambda_module():
    from torch import nn

    class Ids(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 4)

        def forward(self, ids):
            return self.emb(ids)

    return Ids()


def test_loss_fn_is_used_and_its_findings_linked(tmp_path, one_torch_thread):
    mod = load_module(
        tmp_path / "stress_loss.py",
        "import torch\n\n\ndef bce(p):\n    return -torch.log(torch.sigmoid(p)).mean()\n",
        "stress_loss",
    )
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    report = numlint.stress(
        model, torch.randn(8, 8), loss_fn=mod.bce, dtypes=["float32"], scenarios=["large logits"]
    )
    (incident,) = report.incidents
    assert (incident.phase, incident.module) == ("loss", "<loss>")
    assert [(f.code, f.row) for f in incident.findings] == [("NUM102", 5)]


def test_unsupported_dtype_is_skipped_with_reason(monkeypatch, models, one_torch_thread):
    from numlint.stress import runner

    monkeypatch.setattr(
        runner, "autocast_problem", lambda device, dtype: "no float16 here" * (dtype == "float16")
    )
    model, x = _build(lambda: models.ScoreNet(models.SafeLogSigmoid()))
    report = numlint.stress(model, x)
    assert report.ok
    assert {(r.dtype, r.reason) for r in report.skipped} == {("float16", "no float16 here")}
    assert "skipped: float16 (6 scenarios): no float16 here" in str(report)


def test_a_dtype_the_model_cannot_run_is_skipped(one_torch_thread):
    from torch import nn

    class Picky(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            y = self.lin(x)
            if y.dtype != torch.float32:
                raise RuntimeError("\"addmm\" not implemented for 'Half'")
            return y

    report = numlint.stress(Picky(), torch.randn(4, 4), dtypes=["float32", "float16"])
    assert report.ok
    skipped = report.skipped
    assert len(skipped) == 6 and {r.dtype for r in skipped} == {"float16"}
    assert "does not run under float16 autocast" in skipped[0].reason
    assert "not implemented for 'Half'" in skipped[0].reason


def line_of(fn, text: str) -> int:
    """The line of `fn`'s source holding `text`."""
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_a_scenario_that_makes_the_model_raise_is_reported_once_where_it_raised(
    one_torch_thread,
):
    from torch import nn

    class Gram(nn.Module):
        def forward(self, x):
            return torch.linalg.cholesky(x @ x.T)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.gram = Gram()

        def forward(self, x):
            return self.gram(x)

    torch.manual_seed(0)
    scenarios = ["as given", "zero rows", "duplicated rows"]
    report = numlint.stress(Net(), torch.randn(4, 8), dtypes=["float32"], scenarios=scenarios)
    assert report.incidents == [] and not report.ok  # an exception is not a NaN/Inf incident
    (error,) = report.errors  # once, for the two runs it ended
    assert (error.module, error.phase) == ("gram", "forward")
    assert "not positive-definite" in error.error
    assert error.source == f"{__file__}:{line_of(Gram.forward, 'cholesky')}"
    assert error.runs == [("zero rows", "float32"), ("duplicated rows", "float32")]
    assert [r.status for r in report.runs] == ["ok", "error", "error"]
    text = str(report)
    assert "errors (the run raised; not a NaN/Inf):" in text
    assert text.count(error.error) == 1


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "text"),
    [
        (("not a model", None), {}, TypeError, "needs an nn.Module"),
        ((None, "x"), {}, StressError, "holds no tensor"),
        ((None, None), {"scenarios": ["zeros"]}, ValueError, "unknown stress scenario 'zeros'"),
        ((None, None), {"dtypes": ["float64"]}, ValueError, "unknown dtype 'float64'"),
        ((None, None), {"loss_fn": 3}, TypeError, "loss_fn must be callable"),
    ],
)
def test_bad_arguments_get_clear_errors(args, kwargs, error, text):
    model = args[0] if args[0] is not None else torch.nn.Linear(2, 2)
    inputs = args[1] if args[1] is not None else torch.randn(2, 2)
    with pytest.raises(error, match=text.replace("(", r"\(")):
        numlint.stress(model, inputs, **kwargs)


def test_a_model_that_does_not_run_gets_a_clear_error():
    with pytest.raises(StressError, match="raised on the example inputs as given"):
        numlint.stress(torch.nn.Linear(3, 3), torch.randn(2, 5))
    with pytest.raises(StressError, match="already hold NaN"):
        numlint.stress(torch.nn.Linear(3, 3), torch.full((2, 3), float("nan")))


def test_report_text_reads_as_a_table(models, one_torch_thread):
    model, x = _build(lambda: models.NormNet(models.RowNorm()))
    report = numlint.stress(model, x, dtypes=["float32"])
    text = str(report)
    lines = text.splitlines()
    assert lines[0].startswith("numlint stress: NormNet: 1 incident in 6 runs")
    header = next(n for n, line in enumerate(lines) if line.startswith("scenario"))
    assert lines[header].split() == [
        "scenario",
        "dtype",
        "phase",
        "module",
        "kind",
        "static",
        "finding",
    ]
    assert set(lines[header + 1].replace(" ", "")) == {"-"}
    assert lines[header + 2].split()[:6] == ["zero", "rows", "float32", "forward", "norm", "nan"]
    assert "NUM202" in lines[header + 2] and "division by a norm" in lines[header + 2]
    assert "made by aten::div" in text


def test_report_json_round_trip(models, tmp_path, one_torch_thread):
    model, x = _build(lambda: models.NormNet(models.RowNorm()))
    report = numlint.stress(model, x, dtypes=["float32"])
    path = report.save(tmp_path / "report.json")
    data = json.loads(path.read_text())
    assert data["format"] == "numlint-stress-report" and data["ok"] is False
    assert data["incidents"][0]["findings"][0]["code"] == "NUM202"
    again = StressReport.load(path)
    assert again.to_json() == report.to_json()
    assert [e.qualname for e in again.exercised][:2] == ["NormNet", "RowNorm"]


@pytest.mark.parametrize(
    ("content", "text"),
    [
        (None, "no such file"),
        ("{not json", "is not JSON"),
        ('{"format": "other"}', "not a numlint stress report"),
        ('{"format": "numlint-stress-report", "version": 99}', "version 99 is not supported"),
        ('{"format": "numlint-stress-report", "version": 1, "runs": [3]}', "malformed"),
    ],
)
def test_bad_report_files(tmp_path, content, text):
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(StressReportError, match=text):
        StressReport.load(path)


def test_numlint_stress_is_the_package_and_the_function():
    import importlib

    import numlint.stress.report  # noqa: F401 (an import that sets numlint.stress)

    assert callable(numlint.stress)
    assert numlint.stress is importlib.import_module("numlint.stress")
    from numlint import stress

    assert stress is numlint.stress
