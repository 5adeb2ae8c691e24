"""The stress scenarios: the inputs (and logits) that break models, one function each.

A scenario turns the user's example inputs into the inputs of one run. Only floating-point
tensors are changed (token ids and masks are kept); each is copied, never changed in place.
"Rows" are the samples of the batch: index 0 of each floating tensor's first dimension.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

#: What the last layer's output is multiplied by in the "large logits" scenario.
LOGIT_SCALE = 1e3
SMALL_SCALE = 1e-8
LARGE_SCALE = 1e4


@dataclass(frozen=True)
class Scenario:
    """One way to stress a model. `perturb` maps one floating tensor to its stressed copy
    (None: the inputs as given); `logit_scale` multiplies the last layer's output."""

    name: str
    description: str
    perturb: Callable[[Tensor], Tensor] | None = None
    logit_scale: float | None = None


def _zero_rows(t: Tensor) -> Tensor:
    out = t.detach().clone()
    if out.dim() == 0:
        return out.zero_()
    out[0::2] = 0
    return out


def _duplicated_rows(t: Tensor) -> Tensor:
    out = t.detach().clone()
    if out.dim() == 0:
        return out
    odd = out[1::2]
    odd.copy_(out[0::2][: odd.shape[0]])
    return out


def _scaled(factor: float) -> Callable[[Tensor], Tensor]:
    def perturb(t: Tensor) -> Tensor:
        return t.detach() * factor

    return perturb


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("as given", "the example inputs unchanged"),
    Scenario("zero rows", "every other sample of the batch (0, 2, 4, ...) all zeros", _zero_rows),
    Scenario(
        "duplicated rows",
        "every odd sample of the batch a copy of the sample before it",
        _duplicated_rows,
    ),
    Scenario("scaled 1e-8", "the floating-point inputs multiplied by 1e-8", _scaled(SMALL_SCALE)),
    Scenario("scaled 1e4", "the floating-point inputs multiplied by 1e4", _scaled(LARGE_SCALE)),
    Scenario(
        "large logits",
        "the output of the model's last layer (the last module with parameters to run) "
        "multiplied by 1e3, so what follows it (a sigmoid, a softmax, the loss) sees large logits",
        logit_scale=LOGIT_SCALE,
    ),
)
BY_NAME = {s.name: s for s in SCENARIOS}


def resolve(names: Any) -> list[Scenario]:
    """The scenarios named (None: all), in the order given; ValueError for an unknown name."""
    if names is None:
        return list(SCENARIOS)
    if isinstance(names, str):
        names = [names]
    try:
        names = list(names)
    except TypeError:
        raise ValueError(f"scenarios must be a list of names, not {type(names).__name__}") from None
    out = []
    for name in names:
        if isinstance(name, Scenario):
            out.append(name)
        elif isinstance(name, str) and name in BY_NAME:
            out.append(BY_NAME[name])
        else:
            known = ", ".join(repr(s.name) for s in SCENARIOS)
            raise ValueError(f"unknown stress scenario {name!r} (known: {known})")
    if not out:
        raise ValueError("scenarios is empty: name at least one (or None for all)")
    return out


def map_floats(obj: Any, fn: Callable[[Tensor], Tensor], depth: int = 0) -> Any:
    """`obj` with `fn` applied to every floating-point tensor inside tuples, lists, dicts and
    dataclasses; anything else is kept as it is."""
    if isinstance(obj, Tensor):
        return fn(obj) if obj.is_floating_point() else obj
    if depth > 8:
        return obj
    if isinstance(obj, dict):
        return type(obj)((k, map_floats(v, fn, depth + 1)) for k, v in obj.items())
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(map_floats(v, fn, depth + 1) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(map_floats(v, fn, depth + 1) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {
            f.name: map_floats(getattr(obj, f.name), fn, depth + 1)
            for f in dataclasses.fields(obj)
            if f.init
        }
        return dataclasses.replace(obj, **changes)
    return obj


def has_floats(obj: Any) -> bool:
    """Whether `obj` holds a floating-point tensor for a scenario to change."""
    found: list[bool] = []

    def seen(t: Tensor) -> Tensor:
        found.append(True)
        return t

    map_floats(obj, seen)
    return bool(found)


def apply(scenario: Scenario, inputs: Any) -> Any:
    """The inputs of one run: each floating tensor a fresh leaf copy (perturbed by the
    scenario) that requires grad, so backward reaches the first module too."""
    perturb = scenario.perturb

    def leaf(t: Tensor) -> Tensor:
        with torch.no_grad():
            out = perturb(t) if perturb is not None else t.detach().clone()
        return out.requires_grad_(True)

    return map_floats(inputs, leaf)
