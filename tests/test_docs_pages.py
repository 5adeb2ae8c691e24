"""Rule documentation as users read it: `numlint rule`, hover, `numlint docs`, and the hazard
reference that rule pages link to."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import run_cli

from numlint import docs
from numlint.cli import main
from numlint.rule import all_rules

ROOT = Path(__file__).resolve().parent.parent


def _outside_code(page: str) -> list[str]:
    lines, fenced = [], False
    for line in page.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def test_rule_command_prints_markdown_without_the_generated_comment():
    r = run_cli("rule", "NUM101")
    assert r.returncode == 0
    assert r.stdout.startswith("# NUM101 `log-of-softmax`")
    assert "<!--" not in r.stdout


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.CODE)
def test_section_text_is_not_indented(rule):
    """Four leading spaces outside a fence would render as a code block."""
    page = docs.rule_page(rule)
    assert "## What it does" in page
    indented = [line for line in _outside_code(page) if line.startswith("    ")]
    assert not indented, indented


def test_generated_pages_keep_the_comment():
    pages = docs.expected_pages()
    assert pages["NUM101.md"].startswith(docs.HEADER)


def test_docs_never_writes_into_the_current_project(tmp_path: Path, monkeypatch, capsys):
    """An installed numlint (no source checkout) needs --dir; `./rules` stays untouched."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(docs, "checkout_docs_dir", lambda: None)
    assert main(["docs"]) == 2
    assert "--dir" in capsys.readouterr().err
    assert not (tmp_path / "rules").exists()
    assert main(["docs", "--dir", "out"]) == 0
    assert (tmp_path / "out" / "NUM101.md").is_file()


def test_checkout_docs_dir_is_this_checkouts_rules():
    assert docs.checkout_docs_dir() == ROOT / "rules"


def test_hazard_links_resolve():
    """Every `docs/hazards.md#N` a rule cites has its anchor, and the row names the rule."""
    hazards = (ROOT / "docs" / "hazards.md").read_text(encoding="utf-8")
    anchors = set(re.findall(r'<a id="(\d+)"></a>', hazards))
    assert anchors == {str(n) for n in range(1, 36)}
    rows = {
        m.group(1): m.group(0)
        for m in re.finditer(r'^\| <a id="(\d+)"></a>.*$', hazards, flags=re.MULTILINE)
    }
    cited = 0
    for rule in all_rules():
        for n in re.findall(r"docs/hazards\.md#(\d+)", rule.__doc__ or ""):
            cited += 1
            assert n in anchors, (rule.CODE, n)
            assert f"[{rule.CODE}](../rules/{rule.CODE}.md)" in rows[n], (rule.CODE, n)
    assert cited >= 25
    assert "../shared" not in hazards
