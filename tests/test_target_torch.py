"""The project's lowest torch version (`target-torch-version`, or what the project declares)
decides which NUM505 fixes are offered."""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path

import pytest
from conftest import run_cli

from numlint import check_source
from numlint.api import check_paths, fix_source
from numlint.config import Config, ConfigError, clear_cache, discover
from numlint.requirements import declared_torch, lowest_bound
from numlint.rules.training.deprecated_amp_api import DeprecatedAmpApi

AUTOCAST = "import torch\nwith torch.cuda.amp.autocast(enabled=True):\n    pass\n"
CPU_AUTOCAST = "import torch\nwith torch.cpu.amp.autocast():\n    pass\n"
SCALER = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"
CPU_SCALER = "import torch\nscaler = torch.cpu.amp.GradScaler()\n"
DECORATOR = textwrap.dedent(
    """\
    import torch
    class Fn(torch.autograd.Function):
        @staticmethod
        @torch.cuda.amp.custom_fwd
        def forward(ctx, x):
            return x
        @staticmethod
        @torch.cuda.amp.custom_bwd(cast_inputs=torch.float32)
        def backward(ctx, g):
            return g
    """
)


def _config(target: str | None) -> dict:
    config: dict = {"select": ["NUM505"]}
    if target is not None:
        config["target-torch-version"] = target
    return config


def _fixed(source: str, target: str | None) -> str:
    return fix_source(source, "m.py", _config(target)).source


def test_message_says_once_per_call_site():
    assert "every use" not in DeprecatedAmpApi.MESSAGE
    assert "once per call site" in DeprecatedAmpApi.MESSAGE
    (found,) = check_source(SCALER, "m.py", _config(None))
    assert "once per call site" in found.message and "every use" not in found.message


def test_the_warning_is_shown_once_per_call_site():
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(3):
            with torch.cpu.amp.autocast():
                pass
    assert [w.category for w in caught] == [FutureWarning]


@pytest.mark.parametrize(
    ("source", "target", "expected"),
    [
        # torch.amp.autocast: 1.12; torch.autocast: 1.10
        (AUTOCAST, None, 'torch.amp.autocast("cuda", enabled=True)'),
        (AUTOCAST, "1.12", 'torch.amp.autocast("cuda", enabled=True)'),
        (AUTOCAST, "1.11", 'torch.autocast("cuda", enabled=True)'),
        (AUTOCAST, "1.10.2", 'torch.autocast("cuda", enabled=True)'),
        (AUTOCAST, "1.9", None),
        (CPU_AUTOCAST, "2.0", 'torch.amp.autocast("cpu")'),
        # torch.cpu.amp.autocast itself needs 1.10: torch.autocast is always valid
        (CPU_AUTOCAST, "1.8", 'torch.autocast("cpu")'),
        # torch.amp.GradScaler: 2.3
        (SCALER, None, 'torch.amp.GradScaler("cuda")'),
        (SCALER, "2.3", 'torch.amp.GradScaler("cuda")'),
        (SCALER, "2.2.2", None),
        (SCALER, "1.13.1", None),
        # torch.cpu.amp.GradScaler itself needs 2.3: its fix is always valid
        (CPU_SCALER, "2.0", 'torch.amp.GradScaler("cpu")'),
        # torch.amp.custom_fwd / custom_bwd with device_type: 2.4
        (DECORATOR, None, '@torch.amp.custom_fwd(device_type="cuda")'),
        (DECORATOR, "2.4", '@torch.amp.custom_bwd(device_type="cuda", cast_inputs='),
        (DECORATOR, "2.3", None),
    ],
)
def test_fixes_follow_the_target(source, target, expected):
    (first, *_) = check_source(source, "m.py", _config(target))
    fixed = _fixed(source, target)
    if expected is None:
        assert first.fix is None and fixed == source
        assert "so no fix is offered" in first.message
        assert "target-torch-version" in first.message
    else:
        assert first.fix is not None and expected in fixed


def test_withheld_fix_names_the_version_it_needs():
    (scaler,) = check_source(SCALER, "m.py", _config("2.1"))
    assert "from torch 2.3 on" in scaler.message and "supports torch 2.1" in scaler.message
    decorators = check_source(DECORATOR, "m.py", _config("2.1"))
    assert len(decorators) == 2
    assert all("from torch 2.4 on" in d.message for d in decorators)
    (autocast,) = check_source(AUTOCAST, "m.py", _config("1.11"))
    assert "`torch.amp.autocast` needs torch 1.12" in autocast.message


@pytest.mark.parametrize(
    ("constraint", "lowest"),
    [
        (">=2.0", (2, 0)),
        (">=2.0,<3", (2, 0)),
        (">= 2.1, < 3", (2, 1)),
        ("==1.13.1", (1, 13, 1)),
        ("~=2.1", (2, 1)),
        ("==2.1.*", (2, 1)),
        ("^2.2", (2, 2)),
        ("<3", None),
        ("!=2.0", None),
        ("*", None),
        ("", None),
    ],
)
def test_lowest_bound(constraint, lowest):
    assert lowest_bound(constraint) == lowest


def _project(root: Path, pyproject: str | None = None, **files: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    if pyproject is not None:
        (root / "pyproject.toml").write_text(textwrap.dedent(pyproject))
    for name, text in files.items():
        (root / name).write_text(text)
    (root / "train.py").write_text(SCALER)
    clear_cache()
    return root


def test_default_from_pyproject_dependencies(tmp_path: Path):
    root = _project(
        tmp_path,
        """\
        [project]
        name = "p"
        dependencies = ["numpy", "torch>=2.1,<3; python_version >= '3.9'", "torchvision>=0.16"]

        [tool.numlint]
        select = ["NUM505"]
        """,
    )
    assert discover(root / "train.py").target_torch_version == "2.1"
    (found,) = check_paths([root / "train.py"])
    assert found.fix is None and "supports torch 2.1" in found.message


def test_default_from_optional_dependencies_and_poetry(tmp_path: Path):
    optional = _project(
        tmp_path / "a",
        '[project]\nname = "a"\n[project.optional-dependencies]\ngpu = ["torch~=2.2"]\n',
    )
    assert discover(optional / "train.py").target_torch_version == "2.2"
    poetry = _project(
        tmp_path / "b",
        '[tool.poetry.dependencies]\npython = "^3.10"\ntorch = {version = "^2.0"}\n',
    )
    assert discover(poetry / "train.py").target_torch_version == "2.0"


def test_default_from_requirements_txt(tmp_path: Path):
    root = _project(
        tmp_path,
        '[project]\nname = "p"\n',
        **{"requirements.txt": "# pinned\n--extra-index-url https://x\ntorch==1.13.1  # cuda\n"},
    )
    # no [tool.numlint]: the nearest pyproject.toml's project still declares its torch
    assert discover(root / "train.py").target_torch_version == "1.13.1"
    (found,) = check_paths([root / "train.py"])
    assert found.fix is None and "supports torch 1.13.1" in found.message


def test_default_from_setup_cfg_and_the_lowest_of_several(tmp_path: Path):
    root = _project(
        tmp_path,
        "[tool.numlint]\n",
        **{
            "setup.cfg": "[options]\ninstall_requires =\n    numpy\n    torch>=2.3\n",
            "requirements-dev.txt": "torch>=2.0\n",
        },
    )
    assert discover(root / "train.py").target_torch_version == "2.0"


def test_no_lower_bound_offers_every_fix(tmp_path: Path):
    root = _project(tmp_path, '[project]\nname = "p"\ndependencies = ["torch<3"]\n')
    assert discover(root / "train.py").target_torch_version is None
    (found,) = check_paths([root / "train.py"])
    assert found.fix is not None
    assert declared_torch(tmp_path / "nowhere") is None


def test_explicit_setting_wins(tmp_path: Path):
    root = _project(
        tmp_path,
        """\
        [project]
        name = "p"
        dependencies = ["torch>=2.0"]

        [tool.numlint]
        target-torch-version = "2.4"
        """,
        **{"requirements.txt": "torch==1.13.1\n"},
    )
    assert discover(root / "train.py").target_torch_version == "2.4"
    (found,) = check_paths([root / "train.py"])
    assert found.fix is not None
    result = run_cli("check", "--fix", "--select", "NUM505", "train.py", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'torch.amp.GradScaler("cuda")' in (root / "train.py").read_text()


def test_cli_withholds_the_fix_for_an_old_target(tmp_path: Path):
    root = _project(tmp_path, '[tool.numlint]\ntarget-torch-version = "2.1"\n')
    result = run_cli("check", "--fix", "--select", "NUM505", "train.py", cwd=root)
    assert result.returncode == 1
    assert "from torch 2.3 on" in result.stdout
    assert (root / "train.py").read_text() == SCALER


@pytest.mark.parametrize(
    ("value", "shown"),
    [("3", "an integer"), ('"abc"', "'abc'"), ("2.1", "a number"), ('"2"', "'2'")],
)
def test_bad_values_are_configuration_errors(tmp_path: Path, value: str, shown: str):
    with pytest.raises(ConfigError, match="target-torch-version"):
        Config.from_table({"target-torch-version": 3})
    root = _project(tmp_path, f"[tool.numlint]\ntarget-torch-version = {value}\n")
    result = run_cli("check", "train.py", cwd=root)
    assert result.returncode == 2
    assert "target-torch-version" in result.stderr and shown in result.stderr
    assert 'such as "2.1"' in result.stderr
    assert "Traceback" not in result.stderr


def test_the_setting_is_not_a_per_rule_option():
    cfg = Config.from_table({"options": {"NUM505": {"target-torch-version": "2.1"}}})
    assert any("unknown option `target-torch-version`" in w for w in cfg.warnings)
    assert cfg.target_torch_version is None


def test_cached_results_follow_a_changed_requirement(tmp_path: Path):
    root = _project(tmp_path, "[tool.numlint]\n", **{"requirements.txt": "torch>=2.1\n"})
    first = run_cli("check", "--output-format", "json", "train.py", cwd=root)
    assert '"fix": null' in first.stdout
    (root / "requirements.txt").write_text("torch>=2.4.0\n")
    again = run_cli("check", "--output-format", "json", "train.py", cwd=root)
    assert '"fix": null' not in again.stdout and "torch.amp.GradScaler" in again.stdout
