"""numlint.tree's statement walk finds what the full walk finds; line numbers of spellings."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import pytest

from numlint.positions import line_offsets, rows_spelling
from numlint.tree import compound_statements, descendants

NESTED = """
def f(x, n):
    if x:
        while n:
            n -= 1
    elif n:
        for i in range(n):
            if i:
                pass
        else:
            while False:
                pass
    else:
        with open(x) as fh:
            if fh:
                pass
    try:
        if x:
            pass
    except ValueError:
        while x:
            break
    else:
        if n: pass
    finally:
        if n:
            pass
    match x:
        case 1:
            if n:
                pass
        case _:
            pass
    def inner():
        if n:
            return [y for y in range(3) if y]
    class K:
        def m(self):
            while True:
                if self:
                    break
    return (lambda z: z if z else 0)
"""


def _branches(found) -> list[int]:
    return [id(n) for n in found if isinstance(n, (cst.If, cst.While))]


def test_compound_statements_finds_every_branch_in_order() -> None:
    func = cst.parse_module(NESTED).body[0]
    expected = _branches(descendants(func.body))
    assert len(expected) == 14
    assert _branches(compound_statements(func.body)) == expected


def test_compound_statements_on_numlint_itself() -> None:
    root = Path(__file__).resolve().parents[1] / "numlint"
    for path in sorted(root.rglob("*.py"))[::7]:
        module = cst.parse_module(path.read_text())
        for func in descendants(module):
            if isinstance(func, cst.FunctionDef):
                want = _branches(descendants(func.body))
                assert _branches(compound_statements(func.body)) == want, (path, func.name)


@pytest.mark.parametrize(
    "source",
    [
        "a = 1\nloss = F.cross_entropy(x, y)\n\nb = F.cross_entropy\n",
        "x = 1\r\ny = nll_loss(p)\r\nz = 2\n",
        "page = 1\x0c  # a form feed is not a line break\nf = nll_loss(p)\n",
        "s = 'nll_loss nll_loss'\n",
    ],
)
def test_rows_spelling_gives_the_ast_line_numbers(source: str) -> None:
    words = {"cross_entropy", "nll_loss"}
    lines = {
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.Name, ast.Attribute, ast.Constant))
        and any(w in ast.unparse(node) for w in words)
    }
    assert rows_spelling(source, words, line_offsets(source)) == lines
    assert rows_spelling(source, words) == lines
