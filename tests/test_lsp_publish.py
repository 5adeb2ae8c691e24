"""The server writes diagnostics as JSON directly (numlint.lsp.edits.diagnostic_json): the
same JSON lsprotocol's objects and converter give. The incremental re-lint's shortcuts
(what statements bind, kept by their text; findings of statements that did not move)
give what linting the whole buffer gives."""

from __future__ import annotations

import json

import pytest

from numlint import api, engine
from numlint.config import Config
from numlint.diagnostic import Diagnostic, Edit, Fix
from numlint.incremental import Incremental
from numlint.lsp.edits import CONVERTER, diagnostic_json, to_diagnostic
from numlint.lsp.text import TextIndex

SOURCE = (
    "import torch\n"
    "import torch.nn.functional as F\n"
    "\n"
    "def f(x):  # ünï 😀\n"
    "    return torch.log(F.softmax(x, dim=-1))\n"
    "\n"
    "def g(v):\n"
    "    return v / v.norm()\n"
)


def _same(d: Diagnostic, index: TextIndex) -> None:
    want = CONVERTER.unstructure(to_diagnostic(d, index))
    assert json.dumps(diagnostic_json(d, index), sort_keys=True) == json.dumps(want, sort_keys=True)


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_diagnostic_json_is_what_the_converter_writes(encoding: str) -> None:
    index = TextIndex(SOURCE, encoding)
    found = api.check_source(SOURCE, "/tmp/x.py", {"min-confidence": "low", "select": ["ALL"]})
    assert found and any(d.fix is not None for d in found)
    for d in found:
        _same(d, index)
    made = [
        Diagnostic(
            "NUM101", "log-of-softmax", "m", "/tmp/x.py", 4, 20, 5, 3,
            Fix("safe", "use log_softmax", (Edit("x", 5, 12, 5, 40),)),
            extra={"stress": {"verdict": "confirmed", "evidence": "nan at step 3"}},
            confidence="low",
            related=(("/tmp/other file.py", 3, 4, "softmax here"), ("<string>", 1, 1, "x")),
        ),
        Diagnostic("NUM000", "parse-error", "m", "<string>", 99, 1, 99, 1, confidence="medium"),
    ]  # fmt: skip
    for d in made:
        _same(d, index)


def test_statements_sharing_a_line_keep_their_own_bindings() -> None:
    """`a = 1; torch = None` and `torch = None; a = 1`: the statements have the same lines'
    text at different columns; what one binds is not taken for the other's."""
    rules = Config().rules_for("x.py")
    head = "import torch\nimport torch.nn.functional as F\n"
    body = "\ndef f(x):\n    return torch.log(F.softmax(x, dim=-1))\n"
    inc = Incremental()
    texts = [
        head + "a = 1; b = 2\n" + body,
        head + "a = 1; torch = None\n" + body,
        head + "a = 1; b = 2\n" + body,
        head + "torch = None; a = 1\n" + body,
        head + "a = 1\ntorch = None\n" + body,
        head + body,
    ]
    shown = []
    for text in texts:
        found = engine.lint(text, "x.py", rules, reuse=inc)
        assert found == engine.lint(text, "x.py", rules)
        shown.append(len(found))
    assert shown == [1, 0, 1, 0, 0, 1]
