"""Where each hazard starts, per dtype: one table that the probes' trigger inputs come from.

A rule's probe input written `"@kind pattern"` (e.g. `"@softmax-gap [[0.0, {}]]"`) stands
for one sample per dtype: the pattern with `{}` (or `{0}`) replaced by the first value past
that dtype's threshold for `kind`. A bare `"@kind"` gives a 1-D tensor of one value. The
thresholds were measured with torch on CPU; tests/test_probe_thresholds.py measures them
again. Torch-free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from numlint.probe.whitelist import NotProbeable

DTYPE_ORDER = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class Threshold:
    """`hazard` fails for inputs `side` ("above" / "below") of `at[dtype]`."""

    hazard: str
    what: str
    side: str
    at: dict[str, float]


TABLE: dict[str, Threshold] = {
    "exp-overflow": Threshold(
        "torch.exp(x)", "exp(x) overflows to inf", "above",
        {"float32": 88.72, "float16": 11.09, "bfloat16": 88.75},
    ),
    "exp-underflow": Threshold(
        "torch.exp(x)", "exp(x) flushes to 0", "below",
        {"float32": -103.97, "float16": -17.34, "bfloat16": -92.75},
    ),
    "softmax-gap": Threshold(
        "torch.log(torch.softmax(torch.stack([torch.zeros_like(x), x], -1), -1))",
        "log(softmax([0, g])) is -inf", "above",
        {"float32": 103.97, "float16": 17.34, "bfloat16": 92.75},
    ),
    "softmax-gap-gradient": Threshold(
        "torch.log(torch.softmax(torch.stack([torch.zeros_like(x), x], -1), -1))",
        "the gradient of log(softmax([0, g])) is not finite", "above",
        {"float32": 88.72, "float16": 11.09, "bfloat16": 88.75},
    ),
    "sigmoid-one": Threshold(
        "torch.log(1 - torch.sigmoid(x))", "log(1 - sigmoid(x)) is -inf", "above",
        {"float32": 16.64, "float16": 8.32, "bfloat16": 6.23},
    ),
    "sigmoid-zero": Threshold(
        "torch.log(torch.sigmoid(x))", "log(sigmoid(x)) is -inf", "below",
        {"float32": -88.75, "float16": -17.5, "bfloat16": -89.0},
    ),
    "eps-zero": Threshold(
        "x + 0", "an eps literal rounds to 0", "below", {"float16": 2.98e-8},
    ),
}  # fmt: skip


#: Trigger inputs for an operation found in a probed expression, whatever the rule: the
#: expression's own thresholds are reached even when the rule's inputs were made for another
#: form (`log(sigmoid(z))` flagged by a rule whose own probe is `log(1 - sigmoid(z))`).
FOR_OPERATION: dict[str, tuple[str, ...]] = {
    "softmax": ("@softmax-gap-gradient [[0.0, {}]]", "@softmax-gap [[0.0, {}]]"),
    "log_softmax": ("@softmax-gap [[0.0, {}]]",),
    "sigmoid": ("@sigmoid-one", "@sigmoid-zero"),
    "exp": ("@exp-overflow", "@exp-overflow [-{}]", "@exp-underflow", "@exp-underflow [-{}]"),
}
FOR_OPERATION["expm1"] = FOR_OPERATION["exp"]
FOR_OPERATION["softmin"] = FOR_OPERATION["softmax"]


def for_operations(
    operations: set[str], dtypes: tuple[str, ...] = DTYPE_ORDER
) -> list[tuple[str, tuple[str, ...]]]:
    """Input expressions (with their dtypes) for the thresholds of `operations`."""
    out: list[tuple[str, tuple[str, ...]]] = []
    for op in sorted(operations):
        for marker in FOR_OPERATION.get(op, ()):
            out += [e for e in expand(marker, dtypes) if e not in out]
    return out


def trigger(kind: str, dtype: str) -> float:
    """The first round value past `dtype`'s threshold for `kind` (strictly past it)."""
    t = TABLE[kind]
    at = t.at[dtype]
    if abs(at) < 1:
        return at / 10 if t.side == "below" else at * 10
    return float(math.floor(at) + 1) if t.side == "above" else float(math.ceil(at) - 1)


def expand(
    text: str, dtypes: tuple[str, ...] = DTYPE_ORDER
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Input expressions for one declared input, each with the dtypes it is meant for: the
    text itself for every dtype, or one per trigger value for "@kind" (a value shared by
    two dtypes serves both)."""
    if not text.startswith("@"):
        return ((text, dtypes),)
    kind, _, pattern = text[1:].partition(" ")
    pattern = (pattern.strip() or "[{}]").replace("{0}", "{}")
    if kind not in TABLE:
        raise NotProbeable(f"no threshold named {kind!r}")
    by_value: dict[float, list[str]] = {}
    for d in dtypes:
        if d in TABLE[kind].at:
            by_value.setdefault(trigger(kind, d), []).append(d)
    return tuple(
        (f"torch.tensor({pattern.replace('{}', repr(v))})", tuple(ds)) for v, ds in by_value.items()
    )
