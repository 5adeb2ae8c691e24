"""The tensors a loss function reads besides the model's output (the labels a lambda or a
closure closes over, a `functools.partial`'s arguments, module-level tensors it names), and
the same function rebuilt to read stressed copies of them."""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch import Tensor

from numlint.stress import scenarios as sc


def _holds_tensor(value: Any) -> bool:
    found = [False]

    def seen(t: Tensor) -> Tensor:
        found[0] = True
        return t

    sc.map_tensors(value, seen)
    return found[0]


@dataclass
class LossInputs:
    """Where a loss function's own tensors live: closure cells, globals it names, a partial's
    arguments. `values` are what `rebuild` takes back, in the same order."""

    fn: Any
    cells: list[int] = field(default_factory=list)  # indices into fn.__closure__
    globals_: list[str] = field(default_factory=list)
    partial_args: list[int] = field(default_factory=list)
    partial_keywords: list[str] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)

    def rebuild(self, values: list[Any]) -> Callable[..., Any]:
        """The loss function reading `values` in place of its own tensors."""
        if not self.values:
            return self.fn
        fn = self.fn
        k = 0
        if isinstance(fn, functools.partial):
            args = list(fn.args)
            keywords = dict(fn.keywords)
            for i in self.partial_args:
                args[i] = values[k]
                k += 1
            for name in self.partial_keywords:
                keywords[name] = values[k]
                k += 1
            return functools.partial(fn.func, *args, **keywords)
        closure = list(fn.__closure__ or ())
        for i in self.cells:
            closure[i] = types.CellType(values[k])
            k += 1
        glob = fn.__globals__
        if self.globals_:
            glob = dict(glob)
            for name in self.globals_:
                glob[name] = values[k]
                k += 1
        new = types.FunctionType(
            fn.__code__, glob, fn.__name__, fn.__defaults__, tuple(closure) or None
        )
        new.__kwdefaults__ = fn.__kwdefaults__
        new.__dict__.update(fn.__dict__)
        return new


def loss_inputs(fn: Any) -> LossInputs:
    """The tensors `fn` reads besides its argument (empty for modules and other callables)."""
    out = LossInputs(fn)
    if isinstance(fn, functools.partial):
        for i, v in enumerate(fn.args):
            if _holds_tensor(v):
                out.partial_args.append(i)
                out.values.append(v)
        for name, v in fn.keywords.items():
            if _holds_tensor(v):
                out.partial_keywords.append(name)
                out.values.append(v)
        return out
    if not isinstance(fn, types.FunctionType):
        return out
    for i, cell in enumerate(fn.__closure__ or ()):
        try:
            v = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if _holds_tensor(v):
            out.cells.append(i)
            out.values.append(v)
    for name in fn.__code__.co_names:
        v = fn.__globals__.get(name)
        if v is not None and _holds_tensor(v):
            out.globals_.append(name)
            out.values.append(v)
    return out
