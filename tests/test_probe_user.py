"""`numlint check --probe`: verdicts about the user's own expression, and nothing executed."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from numlint import check_source  # noqa: E402
from numlint.probe import annotate, user  # noqa: E402
from numlint.probe.whitelist import NotProbeable, compile_expression  # noqa: E402
from numlint.rule import Probe  # noqa: E402

LOG_OF_ZERO = Probe(
    hazard="torch.log(p)",
    fix="torch.log(p.clamp_min(torch.finfo(p.dtype).tiny))",
    inputs={"p": "torch.tensor([0.0, 0.5])"},
)
HALF_FIRST = ("float16", "float32", "bfloat16")


def verdicts(source: str, select: str = "ALL") -> list[tuple[str, int, dict]]:
    source = textwrap.dedent(source)
    found = check_source(source, "t.py", {"select": [select]})
    return [(d.code, d.row, d.extra["probe"]) for d in annotate(found, {"t.py": source})]


def probe_text(text: str, probe: Probe = LOG_OF_ZERO, dtypes=HALF_FIRST):
    expr = compile_expression(text, {"torch": "torch", "th": "torch"})
    return user.probe_expression(expr, None, probe, dtypes)


def test_eps_that_rounds_to_zero_in_half_is_confirmed():
    ev = probe_text("torch.log(x + 1e-8)")
    assert ev.verdict == "confirmed" and ev.dtype == "float16"
    assert ev.summary.startswith("float16: forward -inf")


def test_eps_that_survives_half_is_not_confirmed():
    assert probe_text("torch.log(x + 1e-3)").verdict == "not confirmed"
    assert probe_text("th.log(x.clamp(min=1e-3))").verdict == "not confirmed"


def test_dtype_hints_order_the_dtypes():
    assert user.dtype_hints("x = y.half()") == ("float16",)
    assert user.dtype_hints("torch.bfloat16") == ("bfloat16",)
    assert user.dtype_hints("x = y + 1") == ()


def test_through_a_variable_the_definition_is_inlined_and_the_fix_runs():
    found = verdicts(
        """
        import torch
        import torch.nn.functional as F
        def loss(z, y):
            p = F.softmax(z, dim=-1)
            return -(y * torch.log(p)).sum(-1)
        """,
        "NUM101",
    )
    (code, row, probe) = found[0]
    assert (code, row) == ("NUM101", 6)
    assert probe["verdict"] == "confirmed"
    assert "z = [[0.0, 89.0]]" in probe["evidence"] and probe["evidence"].endswith("fix finite")
    assert probe["dtype"] == "float32"


def test_method_spelling_and_half_file():
    found = verdicts(
        """
        import torch
        def f(logits):
            return logits.half().softmax(-1).log()
        """,
        "NUM101",
    )
    assert found[0][2]["verdict"] == "confirmed"
    assert found[0][2]["dtype"] == "float16"


def test_opaque_inputs_are_stand_ins_only_when_the_hazard_is_in_view():
    found = verdicts(
        """
        import torch
        def f(model, h):
            logits = model(h)
            return torch.log(torch.softmax(logits, -1))
        """,
        "NUM101",
    )
    assert found[0][2]["verdict"] == "confirmed"
    assert "logits = [[0.0, 89.0]]" in found[0][2]["evidence"]


def test_modules_on_self_are_probed():
    """`self.softmax = nn.Softmax(dim=-1)` in `__init__`: the module is built and called."""
    found = verdicts(
        """
        import torch
        from torch import nn
        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.softmax = nn.Softmax(dim=-1)
            def forward(self, x):
                return torch.log(self.softmax(x))
        """,
        "NUM101",
    )
    probe = found[0][2]
    assert probe["verdict"] == "confirmed", probe
    assert probe["evidence"] == "float32: gradient -inf, NaN at x = [[0.0, 89.0]]; fix finite"


def test_a_model_call_enters_as_a_sample_input():
    """`self.proj(x)` is not evaluated: its output is a stand-in sample (the logits)."""
    found = verdicts(
        """
        import torch
        from torch import nn
        class Head(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.proj = nn.Linear(d, d)
            def forward(self, x):
                return torch.log(torch.softmax(self.proj(x), -1))
        """,
        "NUM101",
    )
    probe = found[0][2]
    assert probe["verdict"] == "confirmed", probe
    assert probe["evidence"] == (
        "float32: gradient -inf, NaN at proj_out = [[0.0, 89.0]]; fix finite"
    )


def test_in_place_edit_before_use_is_not_probeable():
    scopes_src = textwrap.dedent(
        """
        import torch
        def f(z):
            p = torch.softmax(z, -1)
            p[p < 1e-6] = 1e-6
            return p
        """
    )
    info = user.file_info(scopes_src)
    scopes = user.scopes_for(info)
    assert scopes is not None
    assert scopes.lookup("p", (6, 11)) == "mutated"
    assert scopes.lookup("z", (6, 11)).kind == "param"


def test_eps_default_and_self_constant_are_inlined():
    src = textwrap.dedent(
        """
        import torch
        EPS = 1e-5
        class M:
            def __init__(self):
                self.eps = 1e-3
            def f(self, p, eps=1e-8):
                return torch.log(p + eps) + torch.log(p + self.eps) + torch.log(p + EPS)
        """
    )
    info = user.file_info(src)
    scopes = user.scopes_for(info)
    text = "torch.log(p + eps) + torch.log(p + self.eps) + torch.log(p + EPS)"
    tree = user.inline(user.parse_expression(text), scopes, info.imports, (8, 15))
    expr = compile_expression(tree, info.imports)
    assert expr.free == ("p",)
    assert "1e-08" in expr.text and "0.001" in expr.text and "1e-05" in expr.text


def test_sample_roles():
    expr = compile_expression(
        "F.cross_entropy(z.softmax(d), t) + torch.where(m, x, 0).sum(dim=k)",
        {"F": "torch.nn.functional", "torch": "torch"},
    )
    assert user.roles(expr) == {
        "z": "tensor", "d": "dim", "t": "target", "m": "mask", "x": "tensor", "k": "dim"
    }  # fmt: skip


SENTINEL_FILE = """
import os
import torch
import torch.nn.functional as F
open({sentinel!r}, "w").write("imported")

def a(x):
    return torch.log(torch.softmax(open({sentinel!r}, "w").write("a"), -1))

def b(x):
    return torch.log(torch.softmax(__import__("os").system("touch " + {sentinel!r}), -1))

def c(x):
    return torch.log(torch.softmax(x.__class__.__init__.__globals__["os"], -1))

def d(x):
    return torch.log(1 - torch.sigmoid(os.system("touch " + {sentinel!r})))

def e(x):
    p = F.softmax(os.system("touch " + {sentinel!r}), -1)
    return torch.log(p)
"""


def test_probing_never_runs_the_checked_code(tmp_path: Path):
    sentinel = tmp_path / "sentinel"
    checked = tmp_path / "checked.py"
    checked.write_text(SENTINEL_FILE.format(sentinel=str(sentinel)))
    proc = subprocess.run(
        [sys.executable, "-m", "numlint", "check", str(checked), "--probe",
         "--output-format", "json", "--isolated", "--select", "NUM101,NUM102"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert not sentinel.exists(), "probing executed the checked file"
    found = json.loads(proc.stdout)
    by_row = {d["location"]["row"]: d["probe"] for d in found}
    assert len(by_row) == 5, proc.stdout + proc.stderr
    for row in (8, 11, 14, 17):
        assert by_row[row]["verdict"] == "not probeable", by_row[row]
    # `p` is known to be a softmax output: a softmax of sample logits stands for it
    assert by_row[21]["evidence"].startswith("float32: gradient -inf, NaN at p_logits = ")


CE_ON_SOFTMAX = Probe(
    hazard="F.cross_entropy(torch.softmax(z, 1), t)",
    fix="F.cross_entropy(z, t)",
    inputs={"z": "torch.tensor([[10.0, 0.0, 0.0]])", "t": "torch.tensor([1])"},
    dtypes=("float32",),
    compare="gradient",
)


def test_silently_wrong_user_expression_is_compared_with_its_fix():
    imports = {"torch": "torch", "F": "torch.nn.functional"}
    hazard = compile_expression("F.cross_entropy(torch.softmax(logits, 1), labels)", imports)
    fix = compile_expression("F.cross_entropy(logits, labels)", imports)
    ev = user.probe_expression(hazard, fix, CE_ON_SOFTMAX, ("float32",))
    assert ev.verdict == "confirmed", ev.summary
    assert "gradient norm 0.0001 vs 1.4" in ev.summary and "labels = [1]" in ev.summary
    sound = user.probe_expression(fix, fix, CE_ON_SOFTMAX, ("float32",))
    assert sound.verdict == "not confirmed"


def test_a_flagged_statement_is_reduced_to_its_expression():
    assert ast.unparse(user.parse_expression("x /= x.norm()")) == "x / x.norm()"
    assert ast.unparse(user.parse_expression("y = torch.log(p)")) == "torch.log(p)"
    with pytest.raises(NotProbeable):
        user.parse_expression("for i in x: pass")


def test_a_flagged_eps_literal_is_widened_to_the_hazardous_call():
    from numlint.diagnostic import Diagnostic

    src = "import torch\n\ndef f(p):\n    return torch.log(p.half() + 1e-8)\n"
    info = user.file_info(src)
    scopes = user.scopes_for(info)
    column = src.splitlines()[3].index("1e-8") + 1
    d = Diagnostic("NUM999", "x", "m", "t.py", 4, column, 4, column + 4)
    ev = user.probe_finding(d, LOG_OF_ZERO, info, scopes, "cpu")
    assert ev.verdict == "confirmed" and ev.dtype == "float16"
    assert ev.hazard == "torch.log(p.half() + 1e-08)"


def test_log_of_a_sigmoid_gate_reaches_the_saturation_threshold():
    found = verdicts(
        """
        import torch
        def f(gate):
            h = torch.sigmoid(gate)
            return torch.log(h)
        """,
        "NUM102",
    )
    (code, row, probe) = found[0]
    assert (code, row) == ("NUM102", 5)
    assert probe["verdict"] == "confirmed", probe
    assert probe["evidence"] == (
        "float32: forward -inf, gradient NaN at gate = [-89.0]; fix finite"
    )


def test_upstream_hazards_enter_as_sample_inputs():
    """The NaN of `a / a.norm()` on the line above is another finding, not this one's."""
    found = verdicts(
        """
        import torch
        def f(x):
            a = x / x.norm()
            p = torch.softmax(a, -1)
            return torch.log(p)
        """,
        "NUM101",
    )
    (code, row, probe) = found[0]
    assert (code, row) == ("NUM101", 6)
    assert probe["verdict"] == "confirmed", probe
    assert probe["evidence"] == "float32: gradient -inf, NaN at a = [[0.0, 89.0]]; fix finite"
    assert "fix NaN" not in probe["evidence"]


def test_a_softmax_output_made_in_another_function_is_probed_as_one():
    found = verdicts(
        """
        import torch
        import torch.nn.functional as F
        def probs(z):
            return torch.softmax(z, -1)
        def loss(z):
            p = probs(z)
            return torch.log(p)
        def ce(z, t):
            out = probs(z)
            return F.cross_entropy(out, t)
        """
    )
    by_code = {code: probe for code, _, probe in found}
    assert by_code["NUM101"]["evidence"] == (
        "float32: gradient -inf, NaN at p_logits = [[0.0, 89.0]]; fix finite"
    )
    assert by_code["NUM301"]["verdict"] == "confirmed"
    assert "out_logits = [[10.0, 0.0, 0.0]]" in by_code["NUM301"]["evidence"]


def test_gather_indices_and_numeric_strings_get_fitting_samples():
    found = verdicts(
        """
        import torch
        def nll(z, idx):
            probs = torch.softmax(z, -1)
            return -torch.log(probs.gather(1, idx))
        """,
        "NUM101",
    )
    assert found[0][2]["verdict"] == "confirmed", found[0][2]
    assert "idx" not in found[0][2]["evidence"].split(" at ")[1].split(";")[0].split(", ")[0]
    expr = compile_expression('x.masked_fill(x > 0, float("-1e10"))', {"torch": "torch"})
    half = user.probe_expression(
        expr,
        None,
        Probe(hazard="x.masked_fill(x > 0, -1e9)", inputs={"x": "torch.tensor([1.0, 0.0])"}),
        ("float16",),
    )
    assert half.verdict == "confirmed" and "overflow" in half.summary.lower(), half.summary


def test_thresholds_are_carried_through_constant_scaling():
    found = verdicts(
        """
        import torch
        def f(x):
            return torch.log(torch.softmax(x / 12, dim=-1))
        """,
        "NUM101",
    )
    probe = found[0][2]
    assert probe["verdict"] == "confirmed", probe
    assert probe["evidence"] == "float32: gradient -inf, NaN at x = [[0.0, 1068.0]]; fix finite"


def test_an_eps_that_vanishes_in_half_is_shown_to_guard_nothing():
    found = verdicts(
        """
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self, eps=1e-10):
                super().__init__()
                self.eps = eps
                self.half()
            def forward(self, x):
                return x / (x.norm(dim=-1, keepdim=True) + self.eps)
        """,
        "NUM401",
    )
    probe = found[0][2]
    assert probe["verdict"] == "confirmed", probe
    assert probe["evidence"] == (
        "float16: eps 1e-10 rounds to 0, so `x.norm(dim=-1, keepdim=True) + 1e-10` is "
        "exactly 0 at x = [0.0, 0.0]"
    )


def test_names_that_index_rows_get_integer_samples():
    expr = compile_expression(
        "torch.sqrt(((emb[pairs[:, 0]] - emb[pairs[:, 1]]) ** 2).sum(1)) + x[:, i].sum()",
        {"torch": "torch"},
    )
    roles = user.roles(expr)
    assert roles["pairs"] == roles["i"] == "positions" and roles["emb"] == "tensor"
    found = verdicts(
        """
        import torch
        from torch import nn

        class PairLoss(nn.Module):
            def forward(self, emb, pairs):
                d = torch.sqrt(((emb[pairs[:, 0]] - emb[pairs[:, 1]]) ** 2).sum(1))
                return d.mean()
        """
    )
    (probe,) = [p for code, _, p in found if code == "NUM201"]
    assert probe["verdict"] == "confirmed", probe
    assert "pairs = [[0, 0]" in probe["evidence"]


def test_an_exception_inside_a_probe_is_the_probes_own_failure():
    ev = probe_text("torch.log(p.view(3, 7))")  # no sample has 21 elements
    assert ev.verdict == "not probeable"
    assert "the probe's own failure, not a verdict on your code" in ev.summary
    assert not ev.summary.startswith(("RuntimeError", "IndexError", "TypeError"))


def test_a_power_the_caller_sets_is_probed_below_one():
    # the default gamma = 2 would hide it: the exponent stays an input and gets 0.5
    found = verdicts(
        """
        import torch
        def focal(logits, target, gamma=2.0):
            p = torch.sigmoid(logits)
            return -(torch.pow(1 - p, gamma) * target * torch.log(p)).mean()
        """,
        "NUM201",
    )
    assert [(code, row) for code, row, _ in found] == [("NUM201", 5)]
    probe = found[0][2]
    assert probe["verdict"] == "confirmed" and "gamma = 0.5" in probe["evidence"]
