"""What kind of code a file or function is: evaluation code (its results are measured, not
differentiated) and test code (its inputs are built on purpose, its hazards never reach a
training run)."""

from __future__ import annotations

import re
from pathlib import PurePath

#: Packages that run a trained model (a sampler, an inference API): part of _EVAL_DIRS.
_RUN = r"sampling|samplers|inference"
_EVAL_DIRS = re.compile(
    r"(^|[/\\])(metrics?|evaluation|[\w-]*[_-]metrics?|[\w-]*metrics)([/\\]|\.py$)"
    rf"|(^|[/\\])({_RUN}|schedulers|data|datasets?|dataloaders?|preprocessing)[/\\]"
)
_RUN_DIRS = re.compile(rf"(^|[/\\])({_RUN})[/\\]")
_EVAL_FUNCTIONS = re.compile(
    r"(metric|evaluat|postprocess|post_process|sample_loop|(^|_)(p_sample|ddim|plms)(_|$))", re.I
)  # a diffusion model's reverse process (`p_sample`, `ddim_step`) samples, it does not train
_TEST_DIRS = frozenset({"test", "tests", "testing", "_testing", "unittests"})
_TEST_BASE = re.compile(r"^Test|Test(Case)?$")


def evaluation_code(path: str, function: str) -> bool:
    """Code that measures or samples rather than trains: a `metrics` / `evaluation` package
    or module (`utils/metrics.py`, `torchmetrics/`), a `sampling/`, `samplers/`,
    `schedulers/` (a diffusion schedule's coefficients of the timestep) or `inference/`
    package, a data pipeline (`data/`, `datasets/`, `dataloaders/`, `preprocessing/`), or a
    function named for a metric, an evaluation, post-processing or a diffusion sampler's step
    (`p_sample`, `ddim_step`, `sample_loop`).
    Its results are not differentiated."""
    return bool(_EVAL_DIRS.search(path) or (function and _EVAL_FUNCTIONS.search(function)))


def inference_code(path: str) -> bool:
    """A `sampling/`, `samplers/` or `inference/` package: its modules' forward passes run
    a trained model, under no_grad."""
    return bool(_RUN_DIRS.search(path))


def is_test_code(path: str, function: str = "", cls: str = "", bases: tuple[str, ...] = ()) -> bool:
    """A test: a file under `tests/` or `testing/`, `test_*.py`, `*_test.py`,
    `conftest.py`, a module-level `test_*` function, or a method of a test class (`Test*`,
    which pytest collects, or one based on a `unittest.TestCase` or another test class). A
    `test_*` method of any other class is a hook of that class (a LightningModule's
    `test_step`), not a test."""
    p = PurePath(path)
    name = p.name
    if name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py"):
        return True
    if any(part in _TEST_DIRS for part in p.parts[:-1]):
        return True
    if cls:
        return cls.startswith("Test") or any(_TEST_BASE.search(b) for b in bases)
    return function.startswith("test")
