"""The editor's incremental re-lint gives what linting the whole buffer gives, edit by edit."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from numlint import engine
from numlint.config import Config
from numlint.incremental import Incremental

ROOT = Path(__file__).resolve().parent.parent
RULES = Config().rules_for("x.py")
FILES = sorted((ROOT / "tests" / "fixtures").glob("*.py")) + [ROOT / "examples" / "train.py"]
HAZARD = "torch.log(torch.softmax(x, -1))"


def _edits(source: str, rng: random.Random) -> list[str]:
    """A sequence of buffers, each one plausible edit away from the previous one."""
    out = []
    lines = source.splitlines(keepends=True)
    for _ in range(12):
        kind = rng.choice(["insert", "delete", "duplicate", "shift", "hazard-call"])
        i = rng.randrange(len(lines))
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
        new = list(lines)
        if kind == "insert":
            new.insert(i, f"{indent}_probs = {HAZARD}\n")
        elif kind == "delete":
            del new[i]
        elif kind == "duplicate":
            new.insert(i, lines[i])
        elif kind == "shift":
            new.insert(0, "\n")
        else:
            new.insert(i, f"{indent}_v = helper_{rng.randrange(3)}(x)\n")
            new.append(f"\n\ndef helper_{rng.randrange(3)}(x):\n    return {HAZARD}\n")
        text = "".join(new)
        try:
            compile(text, "x.py", "exec")
        except SyntaxError:
            continue  # an edit that breaks the file is covered by the NUM000 test below
        lines = new
        out.append(text)
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_edit_matches_a_full_lint(path):
    rng = random.Random(path.name)
    inc = Incremental()
    source = path.read_text()
    assert inc.lint(source, "x.py", RULES) == engine.lint(source, "x.py", RULES)
    kinds = set()
    for text in _edits(source, rng):
        got = inc.lint(text, "x.py", RULES)
        kinds.add(inc.last)
        assert got == engine.lint(text, "x.py", RULES), inc.last
    assert "partial" in kinds or "full" in kinds


def test_an_edit_inside_a_function_relints_only_part():
    source = (ROOT / "examples" / "train.py").read_text()
    inc = Incremental()
    inc.lint(source, "x.py", RULES)
    assert inc.last == "full"
    assert inc.lint(source, "x.py", RULES) == engine.lint(source, "x.py", RULES)
    assert inc.last == "cached"
    lines = source.splitlines(keepends=True)
    # Add a hazard at the end of the first function's body.
    first = next(i for i, line in enumerate(lines) if line.startswith("def "))
    end = next(
        i for i in range(first + 1, len(lines)) if lines[i].strip() and not lines[i][0].isspace()
    )
    body = max(i for i in range(first + 1, end) if lines[i].strip())
    lines.insert(body, f"    _p = {HAZARD}\n")
    edited = "".join(lines)
    got = inc.lint(edited, "x.py", RULES)
    assert inc.last == "partial"
    assert got == engine.lint(edited, "x.py", RULES)
    assert any(d.row == body + 1 and d.code == "NUM101" for d in got)


def test_syntax_error_then_recovery():
    inc = Incremental()
    good = f"import torch\n\ndef f(x):\n    return {HAZARD}\n"
    assert [d.code for d in inc.lint(good, "x.py", RULES)] == ["NUM101"]
    assert [d.code for d in inc.lint(good.replace("(x)", "(x"), "x.py", RULES)] == ["NUM000"]
    assert inc.lint(good, "x.py", RULES) == engine.lint(good, "x.py", RULES)


def test_configuration_change_relints_everything():
    inc = Incremental()
    good = f"import torch\n\ndef f(x):\n    return {HAZARD}\n"
    inc.lint(good, "x.py", RULES)
    assert inc.lint(good, "x.py", Config(ignore=("NUM101",)).rules_for("x.py")) == []
    assert inc.last == "full"
