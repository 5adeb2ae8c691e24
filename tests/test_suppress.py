"""noqa and numlint: ignore comments, and `--add-noqa`, which writes them."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import run_cli

from numlint import check_source
from numlint.diagnostic import Diagnostic
from numlint.suppress import add_noqa

LINE = "y = torch.log(torch.softmax(x, -1))"


@pytest.mark.parametrize(
    "comment",
    ["# noqa", "# noqa: NUM101", "# noqa:NUM101,NUM102", "# NOQA: NUM102, NUM101",
     "# numlint: ignore[NUM101]", "# numlint: ignore[log-of-softmax]", "# numlint: ignore"],
)  # fmt: skip
def test_line_suppressions(comment):
    assert check_source(f"import torch\n{LINE}  {comment}\n") == []


@pytest.mark.parametrize("comment", ["# noqa: NUM102", "# numlint: ignore[NUM102]", "# nothing"])
def test_other_codes_do_not_suppress(comment):
    assert len(check_source(f"import torch\n{LINE}  {comment}\n")) == 1


def test_noqa_on_other_line_does_not_suppress():
    assert len(check_source(f"import torch  # noqa\n{LINE}\n")) == 1


def test_noqa_on_last_line_of_multiline_finding():
    src = "import torch\ny = torch.log(\n    torch.softmax(x, -1)\n)  # noqa: NUM101\n"
    assert check_source(src) == []


def test_file_level():
    assert check_source(f"# numlint: file-ignore[NUM101]\nimport torch\n{LINE}\n{LINE}\n") == []
    assert check_source(f"# numlint: file-ignore\nimport torch\n{LINE}\n") == []
    assert len(check_source(f"# numlint: file-ignore[NUM102]\nimport torch\n{LINE}\n")) == 1


# -- --add-noqa ------------------------------------------------------------------------

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_add_noqa_on_the_fixtures(tmp_path: Path):
    """After `--add-noqa` the fixtures check clean; a new hazard is still found."""
    tree = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, tree)
    before = run_cli("check", "--isolated", "--select", "ALL", "--statistics", ".", cwd=tree)
    assert before.returncode == 1 and before.stdout.strip()
    r = run_cli("check", "--isolated", "--select", "ALL", "--add-noqa", ".", cwd=tree)
    assert r.returncode == 0, r.stderr
    assert re.search(r"Added \d+ noqa directives\.", r.stderr), r.stderr
    after = run_cli("check", "--isolated", "--select", "ALL", ".", cwd=tree)
    assert after.returncode == 0, after.stdout
    for f in tree.glob("*.py"):  # still valid Python, nothing else changed
        compile(f.read_text(), str(f), "exec")
    again = run_cli("check", "--isolated", "--select", "ALL", "--add-noqa", ".", cwd=tree)
    assert "Added 0 noqa directives." in again.stderr
    with (tree / "NUM103.py").open("a") as fh:
        fh.write("\n\ndef fresh(x):\n    return torch.log(torch.softmax(x, -1))\n")
    new = run_cli(
        "check", "--isolated", "--select", "ALL", "--output-format", "concise", ".", cwd=tree
    )
    assert new.returncode == 1 and "NUM103.py" in new.stdout and "NUM101" in new.stdout


def _finding(code: str, row: int, end_row: int | None = None) -> Diagnostic:
    return Diagnostic(code, "x", "m", "t.py", row, 1, end_row or row, 2)


def test_add_noqa_merges_and_keeps_line_endings():
    source = "a = 1  # noqa: E501\r\nb = 2  # noqa\r\nc = 3  # a note\r\n"
    found = [_finding("NUM101", 1), _finding("NUM102", 2), _finding("NUM103", 3)]
    found.append(_finding("NUM104", 3))
    result = add_noqa(source, found)
    assert result.source == (
        "a = 1  # noqa: E501, NUM101\r\nb = 2  # noqa\r\nc = 3  # a note  # noqa: NUM103, NUM104\r\n"
    )
    assert result.added == 2 and not result.skipped


def test_add_noqa_never_writes_inside_a_string():
    source = 'x = f("""\nline\n""")\ny = g("""\na\n""", """\nb\n""")\n'
    result = add_noqa(source, [_finding("NUM101", 1, 3), _finding("NUM102", 2, 2)])
    assert result.source.splitlines()[2] == '""")  # noqa: NUM101'
    assert result.source.splitlines()[:2] == ['x = f("""', "line"]
    assert [d.code for d in result.skipped] == ["NUM102"]
    assert add_noqa(source, [_finding("NUM000", 1)]).source == source
