"""The editor's incremental re-lint gives what linting the whole buffer gives, edit by edit."""

from __future__ import annotations

import ast
import random
from dataclasses import fields, replace
from pathlib import Path

import libcst as cst
import pytest

from numlint import engine
from numlint.config import Config
from numlint.incremental import Incremental, _moved
from numlint.reparse import Reparser, StatementParser

ROOT = Path(__file__).resolve().parent.parent
RULES = Config().rules_for("x.py")
FILES = sorted((ROOT / "tests" / "fixtures").glob("*.py")) + [ROOT / "examples" / "train.py"]
HAZARD = "torch.log(torch.softmax(x, -1))"
#: Module statements an edit may add: rebinding names definitions read, imports, a star import.
MODULE_LINES = [
    "F = None\n",
    "import torch.nn.functional as F\n",
    "from torch.nn.functional import softmax as log\n",
    "torch = None\n",
    "from torch.nn.functional import *\n",
    "scaler = torch.cuda.amp.GradScaler()\n",
    f"_probs = {HAZARD}\n",
    "def helper_0(x):\n    return x.half()\n",
    "torch.set_default_dtype(torch.float16)\n",
]


def _tops(lines: list[str]) -> list[tuple[int, int]]:
    """(first, end) line indexes of each top-level statement, decorators included."""
    tree = ast.parse("".join(lines))
    out = []
    for stmt in tree.body:
        decorators = getattr(stmt, "decorator_list", [])
        first = min([stmt.lineno] + [d.lineno for d in decorators]) - 1
        out.append((first, stmt.end_lineno or stmt.lineno))
    return out


def _edits(source: str, rng: random.Random) -> list[str]:
    """A sequence of buffers, each one plausible edit away from the previous one."""
    out = []
    lines = source.splitlines(keepends=True)
    for _ in range(16):
        kind = rng.choice(
            ["insert", "delete", "duplicate", "shift", "hazard-call", "module", "unmodule", "move"]
        )
        i = rng.randrange(len(lines))
        tops = _tops(lines)
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
        elif kind == "module":  # a module statement between two top-level statements
            new.insert(rng.choice(tops)[0], rng.choice(MODULE_LINES))
        elif kind == "unmodule":  # a top-level statement (an import, a definition) goes away
            first, end = rng.choice(tops)
            del new[first:end]
        elif kind == "move":  # a top-level statement moves above another one
            (first, end), (to, _) = rng.choice(tops), rng.choice(tops)
            if to < first:
                new[to:to] = new[first:end]
                del new[first + end - first : end + end - first]
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


def _relint(inc: Incremental, source: str, path: str, rules: list) -> list:
    """Lint `source` as the editor does: reusing what `inc` kept from the last lint."""
    return engine.lint(source, path, rules, reuse=inc)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_edit_matches_a_full_lint(path):
    rng = random.Random(path.name)
    inc = Incremental()
    source = path.read_text()
    assert _relint(inc, source, "x.py", RULES) == engine.lint(source, "x.py", RULES)
    kinds = set()
    for text in _edits(source, rng):
        got = _relint(inc, text, "x.py", RULES)
        kinds.add(inc.last)
        assert got == engine.lint(text, "x.py", RULES), inc.last
    assert "partial" in kinds or "full" in kinds


def test_an_edit_inside_a_function_relints_only_part():
    source = (ROOT / "examples" / "train.py").read_text()
    inc = Incremental()
    _relint(inc, source, "x.py", RULES)
    assert inc.last == "full"
    assert _relint(inc, source, "x.py", RULES) == engine.lint(source, "x.py", RULES)
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
    got = _relint(inc, edited, "x.py", RULES)
    assert inc.last == "partial"
    assert got == engine.lint(edited, "x.py", RULES)
    assert any(d.row == body + 1 and d.code == "NUM101" for d in got)


def test_syntax_error_then_recovery():
    inc = Incremental()
    good = f"import torch\n\ndef f(x):\n    return {HAZARD}\n"
    assert [d.code for d in _relint(inc, good, "x.py", RULES)] == ["NUM101"]
    assert [d.code for d in _relint(inc, good.replace("(x)", "(x"), "x.py", RULES)] == ["NUM000"]
    assert _relint(inc, good, "x.py", RULES) == engine.lint(good, "x.py", RULES)


def test_configuration_change_relints_everything():
    inc = Incremental()
    good = f"import torch\n\ndef f(x):\n    return {HAZARD}\n"
    _relint(inc, good, "x.py", RULES)
    assert _relint(inc, good, "x.py", Config(ignore=("NUM101",)).rules_for("x.py")) == []
    assert inc.last == "full"


def test_module_level_edits_relint_only_their_readers():
    source = (ROOT / "examples" / "train.py").read_text()
    inc = Incremental()
    _relint(inc, source, "x.py", RULES)
    # A constant nothing reads: module statements only.
    edited = source + "UNUSED = 1\n"
    assert _relint(inc, edited, "x.py", RULES) == engine.lint(edited, "x.py", RULES)
    assert inc.last == "partial"
    # An import rebinding a name the definitions read changes their findings.
    lines = edited.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("import torch.nn.functional"))
    lines[at] = "import torch.nn as F\n"
    rebound = "".join(lines)
    got = _relint(inc, rebound, "x.py", RULES)
    assert inc.last == "partial"
    assert got == engine.lint(rebound, "x.py", RULES)
    assert got != engine.lint(edited, "x.py", RULES)


def test_a_definition_moved_across_an_import_is_relinted():
    # Above every import, the fix may spell `torch.sigmoid` in full; below `import math`, not.
    body = "def f(t):\n    e = torch.exp(t)\n    return e / (e + 1)\n"
    below, above = f"import math\n\n\n{body}", f"{body}\n\nimport math\n"
    inc = Incremental()
    for text in (below, above, below):
        got = _relint(inc, text, "x.py", RULES)
        assert got == engine.lint(text, "x.py", RULES)
        assert [d.fix is not None for d in got] == [text == above]


def test_a_star_import_relints_everything():
    source = f"import torch\n\ndef f(x):\n    return {HAZARD}\n"
    inc = Incremental()
    _relint(inc, source, "x.py", RULES)
    starred = "from torch import *\n" + source
    assert _relint(inc, starred, "x.py", RULES) == engine.lint(starred, "x.py", RULES)
    assert inc.last == "full"


def test_a_definition_moved_past_a_rebinding_is_linted_again():
    """The same text below `torch = None` and above it: which statement binds `torch` last
    is part of what its findings are kept by."""
    helper = "def f(x):\n    return torch.log(torch.softmax(x, -1))\n"
    below = f"import torch\n\n\ndef g(x):\n    return x\ntorch = None\n{helper}"
    above = f"import torch\n\n\n{helper}def g(x):\n    return x\ntorch = None\n"
    inc = Incremental()
    _relint(inc, below, "x.py", RULES)
    _relint(inc, above, "x.py", RULES)
    assert _relint(inc, below, "x.py", RULES) == engine.lint(below, "x.py", RULES) == []
    got = _relint(inc, above, "x.py", RULES)
    assert got == engine.lint(above, "x.py", RULES)
    assert [d.code for d in got] == ["NUM101"]


def test_a_helper_is_linted_again_when_its_caller_changes():
    """Whether a helper's result is differentiated is read from its callers."""
    helper = "def dist(x):\n    return ((x[:, None] - x[None]) ** 2).sum(-1).sqrt()\n"
    compared = f"import torch\n\n\n{helper}\n\ndef near(x):\n    return dist(x) < 1\n"
    trained = compared.replace("dist(x) < 1", "dist(x).mean()")
    inc = Incremental()
    assert _relint(inc, compared, "x.py", RULES) == engine.lint(compared, "x.py", RULES) == []
    got = _relint(inc, trained, "x.py", RULES)
    assert got == engine.lint(trained, "x.py", RULES)
    assert [d.code for d in got] == ["NUM201"]
    assert _relint(inc, compared, "x.py", RULES) == []


#: Lines an edit may type: blocks opened and closed, strings left open, continuations.
TYPED = ["x = 1", "    y = 2", "", "z = (", ")", "@dec", "'''", "def g():", "    pass", "# c",
         "x = 1 \\", "a = 1; b = 2", "f'{a!r:>{w}}'", "else:", "from __future__ import annotations"]  # fmt: skip


@pytest.mark.parametrize("path", FILES[:8], ids=lambda p: p.name)
def test_the_reparsed_tree_is_the_whole_parse(path: Path) -> None:
    """Edit by edit, the tree parsed again only where the edit changed the buffer (positions
    included) and the syntax errors are those of a parse of the whole text."""
    rng = random.Random(path.name)
    lines = path.read_text().split("\n")
    reparser = Reparser()
    for _ in range(40):
        i = rng.randrange(len(lines) + 1)
        if rng.random() < 0.6 or i == len(lines):
            lines.insert(i, rng.choice(TYPED))
        else:
            del lines[i]
        text = "\n".join(lines)
        got = reparser.syntax_tree(text, "x.py", engine.syntax_tree)
        want = engine.syntax_tree(text, "x.py")
        if isinstance(want, list):
            assert got == want
        else:
            assert isinstance(got, ast.Module)
            assert ast.dump(got, include_attributes=True) == ast.dump(want, include_attributes=True)


#: Lines that decide where libcst cuts a file: comments and blank lines a block above owns.
OWNED = ["    # a comment the block above owns", "    ", "\t# tab", "# c", ""]


@pytest.mark.parametrize("path", FILES[:8], ids=lambda p: p.name)
def test_the_tree_from_reused_statements_is_the_whole_parse(path: Path) -> None:
    """Edit by edit, libcst's module put together from statements parsed alone (kept while
    their text stays the same) equals libcst's parse of the whole text, whitespace owners
    and indentation included; text that does not parse raises as the whole parse does."""
    rng = random.Random(path.name)
    lines = path.read_text().split("\n")
    parser = StatementParser()
    for _ in range(60):
        edited = list(lines)
        i = rng.randrange(len(lines) + 1)
        if rng.random() < 0.6 or i == len(lines):
            edited.insert(i, rng.choice(TYPED + OWNED))
        else:
            del edited[i]
        text = "\n".join(edited)
        try:
            top = ast.parse(text).body
            want = engine.parse(text)
        except (SyntaxError, cst.ParserSyntaxError):
            continue  # typing goes on from the last text that parsed
        lines = edited
        got = parser.parse(text, top, None, engine.parse)
        assert got.code == want.code
        assert got.deep_equals(want)


def test_an_edit_parses_only_the_statement_it_touched() -> None:
    """Typing in a function parses that function alone; the file's other statements are
    the trees parsed before."""
    lines = (ROOT / "examples" / "train.py").read_text().split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("def train"))
    parser = StatementParser()
    parsed: list[str] = []

    def whole(piece: str) -> cst.Module:
        parsed.append(piece)
        return engine.parse(piece)

    before = None
    for k in range(3):
        lines.insert(at + 2, f"    typed_{k} = {k}")
        text = "\n".join(lines)
        parsed.clear()
        module = parser.parse(text, ast.parse(text).body, None, whole)
        assert module.deep_equals(engine.parse(text))
        if before is not None:
            assert len(parsed) == 1 and parsed[0].lstrip("\n").startswith("def train")
            assert module.body[0] is before.body[0]
        before = module


def test_a_repeated_statement_is_a_node_of_its_own() -> None:
    """A statement the text repeats is parsed once per place: each place has its own node
    (positions and findings are kept by node)."""
    text = "import torch\nx = torch.log(torch.softmax(y, -1))\nimport torch\n"
    parser = StatementParser()
    for _ in range(2):
        module = parser.parse(text, ast.parse(text).body, None, engine.parse)
        assert module.deep_equals(engine.parse(text))
        assert module.body[0] is not module.body[2]


def test_a_moved_finding_is_the_finding_replaced() -> None:
    """incremental._moved builds the Diagnostic field by field: it equals dataclasses.replace
    (a field added to Diagnostic must be added there too)."""
    d = engine.lint(f"import torch\n{HAZARD}\n", "x.py", RULES)[0]
    moved = _moved(d, 3)
    assert moved == replace(d, row=d.row + 3, end_row=d.end_row + 3, fix=moved.fix)
    assert [
        getattr(moved, f.name) for f in fields(d) if f.name not in ("row", "end_row", "fix")
    ] == [getattr(d, f.name) for f in fields(d) if f.name not in ("row", "end_row", "fix")]
