"""[tool.numlint] discovery, merging, per-file ignores, options, warnings."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from conftest import HAZARD, run_cli

from numlint import check_paths, check_source
from numlint.api import lint_paths
from numlint.config import Config, ConfigError, discover, load
from numlint.rule import Invalid, Rule, Valid


def _pyproject(root: Path, body: str) -> None:
    (root / "pyproject.toml").write_text(textwrap.dedent(body))


def test_ignore_from_pyproject(project: Path):
    _pyproject(project, '[tool.numlint]\nignore = ["NUM101"]\n')
    assert check_paths([project / "pkg"]) == []
    assert run_cli("check", "pkg", cwd=project).returncode == 0


def test_found_from_checked_path_upward(project: Path, tmp_path: Path):
    _pyproject(project, '[tool.numlint]\nselect = ["NUM102"]\n')
    cfg = discover(project / "pkg" / "bad.py")
    assert cfg.select == ("NUM102",) and cfg.source == project / "pyproject.toml"
    # a nearer pyproject without [tool.numlint] does not stop the search
    (project / "pkg" / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert discover(project / "pkg" / "bad.py").select == ("NUM102",)


def test_cli_flags_override_config(project: Path):
    _pyproject(project, '[tool.numlint]\nignore = ["NUM101"]\n')
    # the command line wins over the file's ignore (as in ruff)
    assert run_cli("check", "--select", "NUM101", "pkg", cwd=project).returncode == 1
    assert run_cli("check", "--extend-select", "NUM101", "pkg", cwd=project).returncode == 1
    assert run_cli("check", "--select", "NUM1", "pkg", cwd=project).returncode == 1
    assert run_cli("check", "--extend-select", "NUM2", "pkg", cwd=project).returncode == 0
    _pyproject(project, '[tool.numlint]\nselect = ["NUM102"]\n')
    assert run_cli("check", "pkg", cwd=project).returncode == 0
    assert run_cli("check", "--select", "NUM101", "pkg", cwd=project).returncode == 1
    assert run_cli("check", "--isolated", "pkg", cwd=project).returncode == 1


def test_per_file_ignores(project: Path):
    _pyproject(project, '[tool.numlint.per-file-ignores]\n"pkg/bad.py" = ["NUM101"]\n')
    assert check_paths([project / "pkg"]) == []
    _pyproject(project, '[tool.numlint.per-file-ignores]\n"pkg/*" = ["NUM1"]\n')
    assert check_paths([project / "pkg"]) == []
    _pyproject(project, '[tool.numlint.per-file-ignores]\n"other/*" = ["NUM1"]\n')
    assert len(check_paths([project / "pkg"])) == 1


def test_exclude(project: Path):
    _pyproject(project, '[tool.numlint]\nexclude = ["pkg/bad.py"]\n')
    assert run_cli("check", ".", cwd=project).returncode == 0
    # a file named explicitly is still checked (as in ruff)
    assert run_cli("check", "pkg/bad.py", cwd=project).returncode == 1
    # from the parent directory (naming only this project: its siblings are other tests')
    assert run_cli("check", "--exclude", "pkg", project.name, cwd=project.parent).returncode == 0


def test_unknown_key_and_option_warn(project: Path):
    _pyproject(
        project, '[tool.numlint]\nselct = ["NUM1"]\n[tool.numlint.options.NUM101]\nfoo = 1\n'
    )
    r = run_cli("check", "pkg", cwd=project)
    assert "unknown key `selct`" in r.stderr
    assert "unknown option `foo` for NUM101" in r.stderr
    assert r.returncode == 1


@pytest.mark.parametrize(
    "body",
    [
        'select = ["NUM777"]',
        'extend-select = ["NUM777"]',
        'ignore = ["NUM777"]',
        '[tool.numlint.per-file-ignores]\n"pkg/*" = ["NUM777"]',
        "[tool.numlint.options.NUM777]\nlimit = 1",
    ],
)
def test_unknown_rule_in_config_is_an_error(project: Path, body: str):
    _pyproject(project, f"[tool.numlint]\n{body}\n")
    r = run_cli("check", "pkg", cwd=project)
    assert r.returncode == 2, r.stdout
    assert "NUM777" in r.stderr and "All checks passed" not in r.stdout
    with pytest.raises(ConfigError, match="NUM777"):
        load(project / "pyproject.toml")


def test_invalid_toml_is_a_clear_error(project: Path):
    (project / "pyproject.toml").write_text("[tool.numlint\n")
    r = run_cli("check", "pkg", cwd=project)
    assert r.returncode == 2 and "not valid TOML" in r.stderr and "Traceback" not in r.stderr
    with pytest.raises(ConfigError):
        load(project / "pyproject.toml")


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ('select = "NUM1"', "`select`"),
        ('exclude = "m.py"', "`exclude`"),
        ("ignore = 5", "`ignore`"),
        ('extend-select = ["NUM1", 2]', "`extend-select`"),
        ('[tool.numlint.per-file-ignores]\n"pkg/*" = "NUM1"', "per-file-ignores"),
        ("min-confidence = 3", "`min-confidence`"),
    ],
)
def test_wrong_type_is_a_clear_error(project: Path, body: str, key: str):
    _pyproject(project, f"[tool.numlint]\n{body}\n")
    r = run_cli("check", "pkg", cwd=project)
    assert r.returncode == 2 and key in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_selection_levels_and_specificity():
    """ruff's order: the file's level, then the command line's; within a level the more
    specific selector wins; per-file ignores remove last."""

    def codes(cfg: Config, path: str | None = None) -> set[str]:
        return {r.CODE for r, _ in cfg.rules_for(path)}

    base = Config.from_table({"select": ["NUM101"], "ignore": ["NUM1"]})
    assert codes(base) == {"NUM101"}  # the full code is more specific than the prefix
    base = Config.from_table({"select": ["NUM1"], "ignore": ["NUM101"]})
    assert "NUM101" not in codes(base) and "NUM102" in codes(base)
    assert "NUM101" in codes(base.with_overrides(extend_select=["NUM101"]))
    assert codes(base.with_overrides(select=["NUM101"])) == {"NUM101"}
    cli = base.with_overrides(select=["NUM2"], ignore=["NUM201"])
    assert "NUM201" not in codes(cli) and "NUM202" in codes(cli)
    assert not codes(cli, "x.py") - codes(cli)
    pfi = Config.from_table({"per-file-ignores": {"x.py": ["NUM1"]}}).with_overrides(
        extend_select=["NUM101"]
    )
    assert "NUM101" in codes(pfi, "y.py") and "NUM101" not in codes(pfi, "x.py")
    with pytest.raises(ConfigError, match="NUM999"):
        Config().with_overrides(ignore=["NUM999"])


class _Threshold(Rule):
    """Test rule: flags integer literals above a configurable threshold.

    What it does:
    x
    Why is this bad?
    x
    Known limitations:
    x
    References:
    x
    """

    CODE = "NUM998"
    NAME = "test-threshold"
    MESSAGE = "too big"
    OPTIONS = {"limit": 10}
    NEEDS_TORCH = False
    VALID = [Valid("x = 1")]
    INVALID = [Invalid("x = 100", 1, 5)]

    def visit_Integer(self, node):
        if int(node.value) > self.options["limit"]:
            self.report(node)


@pytest.fixture
def fresh_selection():
    from numlint import config as config_mod

    config_mod._select.cache_clear()
    yield
    config_mod._select.cache_clear()


def test_options_reach_the_rule(monkeypatch, fresh_selection):
    from numlint import rule as rule_mod

    monkeypatch.setattr(rule_mod, "all_rules", lambda: (_Threshold,))
    cfg = Config.from_table({"select": ["NUM998"], "options": {"NUM998": {"limit": 500}}})
    assert [r for r, _ in cfg.rules_for()] == [_Threshold]
    assert check_source("x = 100\n", config=cfg) == []
    assert len(check_source("x = 1000\n", config=cfg)) == 1
    default = Config.from_table({"select": ["NUM998"]})
    assert len(check_source("x = 100\n", config=default)) == 1


def test_opinionated_rules_need_selection(monkeypatch, fresh_selection):
    from numlint import rule as rule_mod

    class Off(_Threshold):
        CODE = "NUM997"
        NAME = "off-rule"
        DEFAULT_ENABLED = False

    monkeypatch.setattr(rule_mod, "all_rules", lambda: (_Threshold, Off))
    assert [r.CODE for r, _ in Config().rules_for()] == ["NUM998"]
    assert [r.CODE for r, _ in Config.from_table({"extend-select": ["NUM997"]}).rules_for()] == [
        "NUM998",
        "NUM997",
    ]


def test_config_dict_in_api():
    assert check_source(HAZARD, config={"ignore": ["NUM101"]}) == []
    assert [d.code for d in check_source(HAZARD, config={"select": ["NUM1"]})] == ["NUM101"]


def test_json_output_with_config(project: Path):
    _pyproject(project, '[tool.numlint]\nselect = ["ALL"]\n')
    r = run_cli("check", "--output-format", "json", "pkg", cwd=project)
    assert [d["code"] for d in json.loads(r.stdout)] == ["NUM101"]


def test_directory_given_inside_an_excluded_one_is_walked(project: Path):
    """As in ruff: a walk skips an excluded directory it meets, but a directory named on the
    command line (the excluded one, or one inside it) is linted unless --force-exclude."""
    sub = project / "vendor" / "sub"
    sub.mkdir(parents=True)
    (sub / "m.py").write_text(HAZARD)
    _pyproject(project, '[tool.numlint]\nextend-exclude = ["vendor"]\n')
    found = {str(p.relative_to(project)) for p, _ in lint_paths([project])}
    assert "vendor/sub/m.py" not in found and "pkg/bad.py" in found
    assert run_cli("check", "vendor/sub", cwd=project).returncode == 1
    assert run_cli("check", ".", cwd=sub).returncode == 1
    assert run_cli("check", "vendor", cwd=project).returncode == 1
    assert run_cli("check", "--force-exclude", "vendor/sub", cwd=project).returncode == 0
    # a pattern written with a trailing slash names the directory too
    _pyproject(project, '[tool.numlint]\nextend-exclude = ["vendor/"]\n')
    found = {str(p.relative_to(project)) for p, _ in lint_paths([project])}
    assert "vendor/sub/m.py" not in found


def test_force_exclude_applies_to_named_files(project: Path):
    _pyproject(project, '[tool.numlint]\nexclude = ["pkg"]\n')
    assert run_cli("check", "pkg/bad.py", cwd=project).returncode == 1
    r = run_cli("check", "--force-exclude", "pkg/bad.py", cwd=project)
    assert r.returncode == 0, r.stdout
