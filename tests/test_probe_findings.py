"""`numlint check --probe` on modules, training loops and deprecated APIs; one finding alone."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

from numlint import check_source  # noqa: E402
from numlint.diagnostic import Diagnostic  # noqa: E402
from numlint.probe import annotate, probe_diagnostic  # noqa: E402

ALL = {"select": ["ALL"], "min-confidence": "low"}


def probes(source: str, config: dict | None = None) -> list[tuple[str, int, dict]]:
    source = textwrap.dedent(source)
    found = check_source(source, "t.py", config or ALL)
    return [(d.code, d.row, d.extra["probe"]) for d in annotate(found, {"t.py": source})]


def only(source: str, code: str) -> dict:
    found = [p for c, _, p in probes(source) if c == code]
    assert found, f"no {code} finding"
    return found[0]


def test_nn_sigmoid_on_self_is_probed():
    probe = only(
        """
        import torch
        from torch import nn
        class Gate(nn.Module):
            def __init__(self):
                super().__init__()
                self.gate = nn.Sigmoid()
            def forward(self, z):
                return torch.log(1 - self.gate(z))
        """,
        "NUM102",
    )
    assert probe["verdict"] == "confirmed", probe
    assert probe["evidence"] == "float32: forward -inf, gradient NaN at z = [17.0]; fix finite"


def _diagnostic(source: str, text: str, code: str) -> Diagnostic:
    """A finding of `code` on the first occurrence of `text` (one line)."""
    for row, line in enumerate(source.splitlines(), 1):
        if text in line:
            col = line.index(text) + 1
            return Diagnostic(code, "", "", "t.py", row, col, row, col + len(text))
    raise AssertionError(text)


@pytest.mark.parametrize(
    ("body", "text", "code"),
    [
        (
            "class M(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.act = torch.sigmoid\n"
            "    def forward(self, z):\n"
            "        return torch.log(self.act(z))\n",
            "torch.log(self.act(z))",
            "NUM102",
        ),
        (
            "def f(z):\n    sm = F.softmax\n    return torch.log(sm(z, dim=-1))\n",
            "torch.log(sm(z, dim=-1))",
            "NUM101",
        ),
        (
            "class M(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.lsm = nn.LogSoftmax(dim=-1)\n"
            "    def forward(self, z):\n"
            "        return torch.log(self.lsm(z).exp())\n",
            "torch.log(self.lsm(z).exp())",
            "NUM103",
        ),
    ],
    ids=["function-on-self", "function-alias", "logsoftmax-module"],
)
def test_functional_aliases_and_modules_resolve(body, text, code):
    source = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n" + body
    ev = probe_diagnostic(_diagnostic(source, text, code), source)
    assert ev.verdict != "not probeable" or "self" not in ev.summary, ev.summary
    if code != "NUM103":
        assert ev.verdict == "confirmed", ev.summary


def test_probe_diagnostic_gives_verdict_and_rows_for_one_finding():
    source = textwrap.dedent(
        """
        import torch
        def f(x):
            return torch.log(torch.softmax(x, -1))
        """
    )
    (d,) = check_source(source, "t.py", {"select": ["NUM101"]})
    ev = probe_diagnostic(d, source)
    assert ev.verdict == "confirmed"
    assert ev.summary == "float32: gradient -inf, NaN at x = [[0.0, 89.0]]; fix finite"
    assert ev.rows and ev.rows[0].dtype == "float32" and ev.fix_cleared
    assert ev.hazard == "torch.log(torch.softmax(x, -1))"


def test_probe_diagnostic_says_why_it_cannot():
    d = Diagnostic("NUM999", "x", "", "t.py", 1, 1, 1, 2)
    ev = probe_diagnostic(d, "x = 1\n")
    assert ev.verdict == "not probeable" and ev.summary == "the rule declares no probe"
    source = "import torch\ny = torch.log(torch.softmax(x, -1))\n"
    (d,) = check_source(source, "t.py", {"select": ["NUM101"]})
    broken = dataclasses.replace(d, row=40, end_row=40)
    ev = probe_diagnostic(broken, source)
    assert ev.verdict == "not probeable" and "outside the file" in ev.summary


SCALED_CLIP = """
import torch
model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda")
for x, y in data:
    opt.zero_grad()
    loss = model(x).sum()
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
"""


def test_clipping_scaled_gradients_shows_the_threshold_and_how_often_it_fires():
    probe = only(SCALED_CLIP, "NUM502")
    assert probe["verdict"] == "confirmed", probe
    evidence = probe["evidence"]
    assert evidence.startswith("scripted loop with the flagged order on CPU (the checked code")
    assert "the clip fired on 3 of 3 steps" in evidence
    assert "65536x smaller" in evidence and "update norm 1.5e-05 where 0.5 was due" in evidence


@pytest.mark.parametrize(
    ("loop", "expected"),
    [
        (
            "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n"
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n",
            "zero_grad() dropped the clipped gradients before a step used them (0 of 3 used)",
        ),
        (
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
            "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n",
            "the clip measured norms 0, 50, 1e+02: 1 of 3 steps had no gradients to clip, "
            "the rest the previous step's",
        ),
    ],
    ids=["after-step", "before-backward"],
)
def test_clip_order_findings_show_what_the_clip_saw(loop, expected):
    source = "import torch\nfor x in data:\n    loss = model(x).sum()\n" + loop
    probe = only(source, "NUM501")
    assert probe["verdict"] == "confirmed", probe
    assert expected in probe["evidence"]
    assert "update norms 50, 1e+02, 1.5e+02 where 1 was asked" in probe["evidence"]


def test_deprecated_apis_show_the_warning_torch_emits():
    found = probes(
        """
        import torch
        scaler = torch.cuda.amp.GradScaler()
        with torch.cpu.amp.autocast():
            pass
        torch.nn.utils.clip_grad_norm(model.parameters(), 1.0)
        """
    )
    by_code = {(c, row): p for c, row, p in found}
    scaler = by_code[("NUM505", 3)]
    assert scaler["verdict"] == "confirmed"
    assert scaler["evidence"].startswith(
        "torch emits FutureWarning: `torch.cuda.amp.GradScaler(args...)` is deprecated"
    )
    assert scaler["evidence"].endswith("; the replacement does not warn")
    assert "torch.cpu.amp.autocast(args...)" in by_code[("NUM505", 4)]["evidence"]
    clip = by_code[("NUM506", 6)]
    assert "`torch.nn.utils.clip_grad_norm` is now deprecated" in clip["evidence"]


def test_training_loop_probes_never_import_the_optimizer_machinery():
    """torch.optim's first step imports torch._dynamo (seconds): the loops do without it."""
    code = (
        "import sys\n"
        "from numlint.probe.scenarios import for_finding\n"
        "assert for_finding('clip-without-unscale', '').confirmed\n"
        "assert for_finding('clip-order', 'after `optimizer.step()`').confirmed\n"
        "assert for_finding('unscale-after-step', '').confirmed\n"
        "assert for_finding('scaler-step-without-update', '').confirmed\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_every_finding_on_the_examples_and_rule_examples_gets_a_verdict_with_evidence():
    from pathlib import Path

    from numlint.rule import all_rules

    sources = {str(p): p.read_text() for p in sorted(Path("examples").glob("*.py")) if p.is_file()}
    for rule in all_rules():
        for i, example in enumerate(rule.INVALID):
            sources[f"{rule.CODE}-{i}.py"] = textwrap.dedent(example.source)
    missing = []
    for name, text in sources.items():
        found = check_source(text, name, ALL)
        for d in annotate(found, {name: text}):
            probe = d.extra["probe"]
            evidence = probe["evidence"]
            if d.code.startswith("NUM5") and probe["verdict"] != "confirmed":
                missing.append((name, d.code, d.row, evidence))  # a scripted loop always runs
            elif probe["verdict"] == "not probeable" and not evidence:
                missing.append((name, d.code, d.row, "no reason"))
            elif probe["verdict"] == "not confirmed" and "sample input" not in evidence:
                missing.append((name, d.code, d.row, evidence))
            elif probe["verdict"] == "confirmed" and not (
                any(ch.isdigit() for ch in evidence.replace("float16", "").replace("float32", ""))
                or any(w in evidence for w in ("NaN", "inf", "raises", "FutureWarning"))
            ):
                missing.append((name, d.code, d.row, evidence))
    assert not missing, missing
