"""The numlint pytest plugin: the `numlint_stress` fixture.

    def test_model_is_stable(numlint_stress):
        numlint_stress(MyModel(), torch.randn(8, 16))

The fixture calls `numlint.stress` and fails the test with the report when a scenario made a
NaN or Inf. Registered as the `numlint` pytest11 entry point (loaded with numlint installed;
`-p numlint` loads it where plugin autoloading is off, `-p no:numlint` turns it off). Loading
it imports nothing heavy: torch loads when the fixture is first called."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from numlint.stress.report import StressReport


def _stress(model: Any, inputs: Any, **kwargs: Any) -> StressReport:
    """Stress `model` on `inputs` (the keywords of `numlint.stress`); fail the test with the
    report when a scenario made a NaN or Inf, else return the report."""
    __tracebackhide__ = True
    from numlint.stress.runner import stress

    report = stress(model, inputs, **kwargs)
    if not report.ok:
        pytest.fail(str(report), pytrace=False)
    return report


@pytest.fixture
def numlint_stress() -> Callable[..., StressReport]:
    """`numlint_stress(model, inputs, **kw)`: `numlint.stress`, failing the test on an incident."""
    return _stress
