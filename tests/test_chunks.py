"""Parsing only the needed definitions (numlint.chunks) and per-statement positions
(numlint.positions) give exactly what the whole file gives."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from numlint import chunks, engine
from numlint.config import Config
from numlint.positions import Positions, line_offsets
from numlint.rule import all_rules
from numlint.tree import descendants

ROOT = Path(__file__).resolve().parent.parent
RULES = Config(select=("ALL",)).rules_for("x.py")
FILES = sorted((ROOT / "tests" / "fixtures").glob("*.py")) + sorted(
    (ROOT / "examples").glob("*.py")
)


def _examples() -> list:
    """Every rule example, with its rule's code."""
    out = []
    for rule in all_rules():
        for i, ex in enumerate((*rule.VALID, *rule.INVALID)):
            out.append(pytest.param(rule.CODE, ex.source, id=f"{rule.CODE}-{i}"))
    return out


def _both(source: str) -> tuple[list, list]:
    return (
        engine.lint(source, "x.py", RULES, chunked=True),
        engine.lint(source, "x.py", RULES, chunked=False),
    )


@pytest.mark.parametrize(("code", "source"), _examples())
def test_each_rule_alone_same_with_and_without_chunks(code: str, source: str) -> None:
    """What a rule finds does not depend on the code other rules' triggers keep (a `.half()`
    in another method of the class, an eps in `forward` with `dtype=torch.float16` in
    `__init__`)."""
    rules = Config(select=(code,)).rules_for("x.py")
    chunked = engine.lint(source, "x.py", rules, chunked=True)
    assert chunked == engine.lint(source, "x.py", rules, chunked=False)


@pytest.mark.parametrize(
    "path", [p for p in FILES if p.stem.startswith("NUM")], ids=lambda p: p.name
)
def test_each_fixture_alone_same_with_and_without_chunks(path: Path) -> None:
    rules = Config(select=(path.stem[:6],)).rules_for("x.py")
    source = path.read_text()
    chunked = engine.lint(source, "x.py", rules, chunked=True)
    whole = engine.lint(source, "x.py", rules, chunked=False)
    assert whole and chunked == whole


@pytest.mark.parametrize(("code", "source"), _examples())
def test_rule_examples_same_with_and_without_chunks(code: str, source: str) -> None:
    chunked, whole = _both(source)
    assert chunked == whole


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_fixture_files_same_with_and_without_chunks(path):
    chunked, whole = _both(path.read_text())
    assert whole, "the fixture has findings"
    assert chunked == whole


# A helper file where only `train` and what it depends on may be parsed.
PADDED = '''\
import torch
import torch.nn as nn

criterion = nn.CrossEntropyLoss()


def unrelated(a, b):
    """Mentions softmax and log( in prose only."""
    # torch.log(torch.softmax(x)) in a comment
    return a + b


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.Softmax(dim=-1)

    @property
    def size(self):
        return 3

    def forward(self, x):
        return torch.log(self.act(x))


def train(model, x, y):
    probs = torch.softmax(model(x), dim=-1)
    return criterion(probs, y)
'''


def _reduced(source: str) -> str:
    tree = ast.parse(source)
    active = [r for r, _ in engine.active_rules(source, RULES)]
    return chunks.reduce(source, tree, active, line_offsets(source)).text


def test_blanks_what_no_rule_needs_and_keeps_line_numbers():
    text = _reduced(PADDED)
    assert "def unrelated" not in text  # its triggers are in prose only
    assert "def size" not in text and "\n    pass\n" in text  # a method becomes `pass`
    # forward uses self.act, set from a trigger in __init__; train uses criterion.
    for kept in ("def forward", "self.act = nn.Softmax", "def train", "criterion = "):
        assert kept in text
    compile(text, "x.py", "exec")
    assert [d.row for d in engine.lint(PADDED, "x.py", RULES)] == [23, 28]


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_reduced_source_parses_and_maps_lines(newline):
    source = PADDED.replace("\n", newline)
    tree = ast.parse(source)
    active = [r for r, _ in engine.active_rules(source, RULES)]
    reduced = chunks.reduce(source, tree, active, line_offsets(source))
    cst.parse_module(reduced.text)
    assert reduced.lines is not None
    kept = reduced.text.splitlines()
    original = source.splitlines()
    assert len(reduced.lines) >= len(kept)
    for i, line in enumerate(kept):
        assert line == original[reduced.lines[i] - 1] or line.strip() in ("pass", "")
    chunked, whole = _both(source)
    assert chunked == whole and whole


TRICKY = '''\
import torch


@decorator(
    1,
)
class A(Base):
    """Doc
    string."""

    x = torch.log(
  torch.softmax(y, -1))

    def f(self, t):
        s = """multi
line""" + str(torch.log(t))
        return torch.log(
    t
        ) / t.norm()

    class Inner:
        def g(self):
            return torch.exp(1)


class Tabs:
	def g(self, v):
		return torch.log(torch.softmax(v,
	-1))

async def h():
    a = 1; b = torch.sqrt(a)
    return (torch.log(b))
if True:
    z = torch.log(
        torch.sigmoid(z))
'''


@pytest.mark.parametrize("source", [TRICKY, TRICKY.replace("\n", "\r\n")], ids=["lf", "crlf"])
def test_positions_match_the_whole_module_for_every_node(source):
    tree = ast.parse(source)
    module = cst.parse_module(source)
    truth = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    nodes = [n for n in descendants(module) if n in truth and n is not module]
    positions = Positions(module, tree.body, source)
    positions.prepare(nodes)
    assert not positions.whole
    for node in nodes:
        assert positions[node] == truth[node], module.code_for_node(node)


def test_positions_on_real_files_sampled():
    rng = random.Random(0)
    for path in FILES:
        source = path.read_text()
        module = cst.parse_module(source)
        truth = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        nodes = [n for n in descendants(module) if n in truth and n is not module]
        sample = rng.sample(nodes, min(20, len(nodes)))
        positions = Positions(module, ast.parse(source).body, source)
        positions.prepare(sample)
        assert [positions[n] for n in sample] == [truth[n] for n in sample], path.name


def test_a_long_data_table_is_left_out_and_findings_stay_put():
    rows = "".join(f"    ({i}, torch.float16): ({i}, -{i}.5, 'x'),\n" for i in range(150))
    source = (
        "import torch\n"
        "small = {1: 2}\n"
        f"TABLE: dict = {{\n{rows}}}\n"
        "EPS = 1e-12\n"
        "\n"
        "def f(x, key):\n"
        "    p = torch.log(torch.softmax(x, -1)) * TABLE[key][0]\n"
        "    return x / (x.norm() + EPS) + small[1]\n"
    )
    got = engine.lint(source, "x.py", RULES)
    assert got == engine.lint(source, "x.py", RULES, chunked=False)
    assert [(d.code, d.row) for d in got] == [("NUM101", 158)]
    tree = ast.parse(source)
    reduced = chunks.reduce(source, tree, [r for r, _ in RULES], line_offsets(source))
    assert "float16" not in reduced.text and "EPS = 1e-12" in reduced.text
    # A table sharing a line with another statement, or a short one, stays.
    for kept in (f"a = 1; TABLE = {{\n{rows}}}\n", "TABLE = {\n" + rows[:200] + "}\n"):
        text = "import torch\n" + kept
        assert "float16" in chunks.reduce(text, ast.parse(text), [], line_offsets(text)).text


def test_active_rules_as_a_scan_for_each_word_finds_them():
    """The words a family's one search finds (`e-[0-9]` for `e-6`, `e-7`...) are those a scan
    for each finds, alone or with others: a file whose only trigger is one of them is linted."""
    words = sorted({w for r, _ in RULES for w in (*r.TRIGGERS, *r.ALSO_REQUIRES)})
    assert {"e-7", "E-5"} <= set(engine._families(tuple(r for r, _ in RULES)))

    def each(source: str) -> list:
        return [
            (r, o)
            for r, o in RULES
            if ("torch" in source or not r.NEEDS_TORCH)
            and (not r.TRIGGERS or any(t in source for t in r.TRIGGERS))
            and (not r.ALSO_REQUIRES or any(t in source for t in r.ALSO_REQUIRES))
            and (r.FILE_REQUIRES is None or r.FILE_REQUIRES.search(source) is not None)
        ]

    texts = [f"import torch\nx = {w}\n" for w in words]
    texts += [f"x = {a} @ {b}" for a in words for b in words[::7]]
    texts += ["torch; eps = 1e-10e-7", "e-e-1 E-E-2 @ ", "1ee-9 torch", "1e-", "e-\u0663", ""]
    for text in texts:
        assert engine.active_rules(text, RULES) == each(text), text
    half = [r for r in RULES if r[0].CODE == "NUM401"]
    # `e-9` its only trigger; an eps of 1e-5 survives float16 (FILE_REQUIRES)
    for eps, linted in (("1e-9", True), ("1.0", False), ("1e-5", False), ("5E-12", True)):
        source = f"import torch\n\n\ndef f(x, w):\n    return x @ w + {eps}\n"
        assert bool(engine.active_rules(source, half)) is linted
