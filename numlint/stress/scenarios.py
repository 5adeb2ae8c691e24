"""The stress scenarios: the inputs (and logits) that break models, one function each.

A scenario turns the user's example inputs (and the tensors the loss function closes over)
into those of one run. Floating-point scenarios change the model's floating-point inputs;
label and mask scenarios change integer and bool tensors by their role:

- "labels": integer class indices (a 1-d integer input, or an integer tensor the loss reads);
- "tokens": integer sequences (token ids: 2-d or more, values beyond 0/1);
- "masks": bool tensors, and integer tensors of 2-d or more holding only 0 and 1.

Every tensor is copied, never changed in place. Values stay within what the batch holds
(classes already present, the pad id 0, -100 for `ignore_index`) and within the run's dtype
(a scaled input never overflows it: that would be an incident of the scenario, not the model).
"Rows" are the samples of the batch: index 0 of a tensor's first dimension.
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
#: The `ignore_index` of torch's losses.
IGNORE_INDEX = -100
#: Roles of the tensors a scenario changes.
ROLES = ("floats", "labels", "masks", "tokens")

#: perturb(tensor, largest value the run's dtype holds with headroom) -> stressed copy
Perturb = Callable[[Tensor, float], Tensor]
#: change(tensor, role) -> stressed copy, or None when the scenario does not apply to it
Change = Callable[[Tensor, str], "Tensor | None"]


@dataclass(frozen=True)
class Scenario:
    """One way to stress a model. `perturb` maps one floating tensor to its stressed copy
    (None: floats as given); `change` maps an integer or bool tensor of a role in `roles`;
    `logit_scale` multiplies the last layer's output."""

    name: str
    description: str
    perturb: Perturb | None = None
    logit_scale: float | None = None
    change: Change | None = None
    roles: tuple[str, ...] = ()

    @property
    def varies(self) -> tuple[str, ...]:
        """The roles of input this scenario changes ("floats", "labels", "masks", "tokens")."""
        floats = self.perturb is not None or self.logit_scale is not None
        return (("floats",) if floats else ()) + self.roles


# ---------------------------------------------------------------------- floating point
def _zero_rows(t: Tensor, limit: float) -> Tensor:
    out = t.detach().clone()
    if out.dim() == 0:
        return out.zero_()
    out[0::2] = 0
    return out


def _duplicated_rows(t: Tensor, limit: float) -> Tensor:
    out = t.detach().clone()
    if out.dim() == 0:
        return out
    odd = out[1::2]
    odd.copy_(out[0::2][: odd.shape[0]])
    return out


def _scaled(factor: float) -> Perturb:
    def perturb(t: Tensor, limit: float) -> Tensor:
        t = t.detach()
        if factor > 1 and t.numel():
            top = float(t.abs().max())
            if top * factor > limit:  # (the scaled input itself would overflow the dtype)
                return t * (limit / top)
        return t * factor

    return perturb


# ---------------------------------------------------------------------- labels
def _classes(t: Tensor) -> list[int]:
    """The classes present, most frequent first (ties: smaller first)."""
    values, counts = torch.unique(t[t >= 0], return_counts=True)
    pairs = sorted(zip(values.tolist(), counts.tolist(), strict=True), key=lambda p: (-p[1], p[0]))
    return [int(v) for v, _ in pairs]


def _labels(fn: Callable[[Tensor], Tensor | None]) -> Change:
    """A change of class labels, applied to the flattened tensor (per-token labels too)."""

    def change(t: Tensor, role: str) -> Tensor | None:
        if role != "labels" or t.dim() == 0 or t.numel() < 2:
            return None
        out = fn(t.detach().reshape(-1).clone())
        return None if out is None else out.reshape(t.shape)

    return change


def _first_class(flat: Tensor) -> int:
    """The class of the first labelled entry (ignored entries, below 0, are skipped)."""
    return int(flat[flat >= 0][0])


def _class_once(flat: Tensor) -> Tensor | None:
    classes = _classes(flat)
    if len(classes) < 2:
        return None
    c = _first_class(flat)
    other = next(k for k in classes if k != c)
    first = int((flat == c).nonzero()[0])
    rest = flat[first + 1 :]
    rest[rest == c] = other
    return flat


def _one_class(flat: Tensor) -> Tensor | None:
    if len(_classes(flat)) < 2:
        return None
    flat[flat >= 0] = _first_class(flat)  # (ignored entries stay ignored)
    return flat


def _class_missing(flat: Tensor) -> Tensor | None:
    classes = _classes(flat)
    if len(classes) < 2:
        return None
    gone = min(classes)
    flat[flat == gone] = next(k for k in classes if k != gone)
    return flat


def _different_labels(flat: Tensor) -> Tensor | None:
    classes = sorted(_classes(flat))
    if len(classes) < 2:
        return None
    even = flat[0::2][: flat[1::2].shape[0]]
    nxt = {c: classes[(k + 1) % len(classes)] for k, c in enumerate(classes)}
    odd = torch.tensor([nxt.get(int(v), int(v)) for v in even], dtype=flat.dtype)
    flat[1::2] = odd  # (an ignored entry's copy stays ignored)
    return flat


def _ignored(flat: Tensor) -> Tensor | None:
    return flat.fill_(IGNORE_INDEX)


# ---------------------------------------------------------------------- sequences and masks
def _every_other_row(t: Tensor, value: Any) -> Tensor:
    out = t.detach().clone()
    out[0::2] = value
    return out


def _padding_only(t: Tensor, role: str) -> Tensor | None:
    if t.dim() < 2:
        return None
    if role == "tokens":
        return _every_other_row(t, 0)  # (0: the usual pad id)
    if role == "masks":
        return _every_other_row(t, False if t.dtype == torch.bool else 0)
    return None


def _masks(value: bool) -> Change:
    def change(t: Tensor, role: str) -> Tensor | None:
        if role != "masks" or t.dim() == 0:
            return None
        return _every_other_row(t, value if t.dtype == torch.bool else int(value))

    return change


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("as given", "the example inputs unchanged"),
    Scenario("zero rows", "every other sample of the batch (0, 2, 4, ...) all zeros", _zero_rows),
    Scenario(
        "duplicated rows",
        "every odd sample of the batch a copy of the sample before it",
        _duplicated_rows,
    ),
    Scenario("scaled 1e-8", "the floating-point inputs multiplied by 1e-8", _scaled(SMALL_SCALE)),
    Scenario(
        "scaled 1e4",
        "the floating-point inputs multiplied by 1e4 (less where the run's dtype could not "
        "hold their products: at most half the square root of its largest value, 128 in float16)",
        _scaled(LARGE_SCALE),
    ),
    Scenario(
        "large logits",
        "the output of the model's last layer (the last module with parameters to run) "
        "multiplied by 1e3, so what follows it (a sigmoid, a softmax, the loss) sees large logits",
        logit_scale=LOGIT_SCALE,
    ),
    Scenario(
        "a class once",
        "the class of the first sample occurs nowhere else in the batch (its other samples "
        "take the most frequent other class)",
        change=_labels(_class_once),
        roles=("labels",),
    ),
    Scenario(
        "one class",
        "every sample has the class of the first",
        change=_labels(_one_class),
        roles=("labels",),
    ),
    Scenario(
        "a class with no sample",
        "the smallest class present has no sample (they take another class)",
        change=_labels(_class_missing),
        roles=("labels",),
    ),
    Scenario(
        "duplicates, other labels",
        "every odd sample a copy of the sample before it, with another class",
        _duplicated_rows,
        change=_labels(_different_labels),
        roles=("labels",),
    ),
    Scenario(
        "ignore_index everywhere",
        f"every label {IGNORE_INDEX} (the `ignore_index` of torch's losses)",
        change=_labels(_ignored),
        roles=("labels",),
    ),
    Scenario(
        "padding-only sequences",
        "every other sequence all padding (token id 0) and its mask all off",
        change=_padding_only,
        roles=("tokens", "masks"),
    ),
    Scenario(
        "empty masks",
        "every other row of each mask all False (0)",
        change=_masks(False),
        roles=("masks",),
    ),
    Scenario(
        "full masks",
        "every other row of each mask all True (1)",
        change=_masks(True),
        roles=("masks",),
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


def map_tensors(obj: Any, fn: Callable[[Tensor], Tensor], depth: int = 0) -> Any:
    """`obj` with `fn` applied to every tensor inside tuples, lists, dicts and dataclasses;
    anything else is kept as it is."""
    if isinstance(obj, Tensor):
        return fn(obj)
    if depth > 8:
        return obj
    if isinstance(obj, dict):
        return type(obj)((k, map_tensors(v, fn, depth + 1)) for k, v in obj.items())
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(map_tensors(v, fn, depth + 1) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(map_tensors(v, fn, depth + 1) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {
            f.name: map_tensors(getattr(obj, f.name), fn, depth + 1)
            for f in dataclasses.fields(obj)
            if f.init
        }
        return dataclasses.replace(obj, **changes)
    return obj


def map_floats(obj: Any, fn: Callable[[Tensor], Tensor], depth: int = 0) -> Any:
    """`obj` with `fn` applied to every floating-point tensor inside it."""
    return map_tensors(obj, lambda t: fn(t) if t.is_floating_point() else t, depth)


def role(t: Tensor, loss_side: bool = False) -> str | None:
    """The role of an integer or bool tensor ("labels", "tokens", "masks"), or None (floats,
    scalars). `loss_side`: a tensor the loss function reads (an integer one is labels)."""
    if t.is_floating_point() or t.is_complex() or t.dim() == 0:
        return None
    if t.dtype == torch.bool:
        return "masks"
    if t.dim() >= 2 and t.numel() and bool(((t == 0) | (t == 1)).all()):
        return "masks"
    if loss_side or t.dim() == 1:
        return "labels"
    return "tokens"


def roles_in(obj: Any, loss_side: bool = False) -> set[str]:
    """The roles of the tensors inside `obj` ("floats" for floating-point ones)."""
    found: set[str] = set()

    def seen(t: Tensor) -> Tensor:
        r = "floats" if t.is_floating_point() else role(t, loss_side)
        if r is not None:
            found.add(r)
        return t

    map_tensors(obj, seen)
    return found


def has_floats(obj: Any) -> bool:
    """Whether `obj` holds a floating-point tensor for a scenario to change."""
    return "floats" in roles_in(obj)


def apply(
    scenario: Scenario, inputs: Any, limit: float = float("inf"), loss_side: bool = False
) -> Any:
    """The inputs of one run: each floating tensor a fresh leaf copy (perturbed by the
    scenario) that requires grad, so backward reaches the first module too; integer and bool
    tensors changed by their role when the scenario changes that role. `limit`: the largest
    magnitude a perturbed value may take (the run dtype's, with headroom). `loss_side`: the
    tensors the loss reads (none of them is made a leaf)."""
    perturb = scenario.perturb
    change = scenario.change

    def one(t: Tensor) -> Tensor:
        if t.is_floating_point():
            if loss_side:
                return t
            with torch.no_grad():
                out = perturb(t, limit) if perturb is not None else t.detach().clone()
            return out.requires_grad_(True)
        r = role(t, loss_side)
        if change is not None and r in scenario.roles:
            out = change(t, r)
            if out is not None:
                return out
        return t

    return map_tensors(inputs, one)


def applies(scenario: Scenario, inputs: Any, loss_inputs: Any) -> bool:
    """Whether the scenario changes anything in these inputs."""
    if scenario.perturb is None and scenario.change is None:
        return True
    changed = [False]

    def probe(loss_side: bool) -> Callable[[Tensor], Tensor]:
        def seen(t: Tensor) -> Tensor:
            if t.is_floating_point():
                if scenario.perturb is not None and not loss_side and not scenario.roles:
                    changed[0] = True
                return t
            r = role(t, loss_side)
            if scenario.change is not None and r in scenario.roles:
                if scenario.change(t, r) is not None:
                    changed[0] = True
            return t

        return seen

    map_tensors(inputs, probe(False))
    map_tensors(loss_inputs, probe(True))
    return changed[0]
