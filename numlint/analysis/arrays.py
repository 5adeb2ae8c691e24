"""Is a value a NumPy array (or another non-torch object) rather than a tensor?"""

from __future__ import annotations

import libcst as cst

from numlint.analysis.context import Context, Value
from numlint.analysis.ops import foreign
from numlint.analysis.summaries import array_of
from numlint.analysis.tables import HOST_METHODS

#: Annotations that name a NumPy array.
_NUMPY_ANNOTATIONS = ("numpy.ndarray", "numpy.typing.NDArray", "numpy.array")
#: Methods whose result is a NumPy array, a pandas object or a Python value, never a tensor
#: (a tensor has `clone`, not `copy`).
_TO_HOST = HOST_METHODS | {"copy"}


def not_a_tensor(ctx: Context, value: Value) -> bool:
    """Whether `value` is NumPy, math or a Python number: a parameter annotated
    `np.ndarray`, the result of `.numpy()` / `.tolist()` / `.item()`, a `numpy.` call, here
    or, by data flow, in the functions that return it and the callers that pass it
    (numlint.analysis.summaries.Project.array)."""
    if _visibly_host(ctx, value):
        return True
    return value.env is ctx.env and array_of(ctx, value.node)


def _visibly_host(ctx: Context, value: Value, depth: int = 0) -> bool:
    """NumPy, math or a Python number as this function shows it."""
    if depth > 8:  # `self.z = self.z * a + b` refers to itself
        return False
    if foreign(ctx, value) or array_file(ctx):
        return True
    for _ in range(8):
        value = ctx.deref(value)
        node = value.node
        if isinstance(node, cst.Subscript):
            value = Value(node.value, value.env, value.mutations)
            continue
        if isinstance(node, cst.Call):
            callee = ctx.callee(node, value.env)
            if callee.method in _TO_HOST:
                return True
            if callee.method is not None and callee.receiver is not None:
                if callee.method in ("sum", "mean", "max", "min", "std", "astype", "reshape"):
                    value = Value(callee.receiver, value.env, value.mutations)
                    continue
            return False
        if isinstance(node, cst.Name):
            return _annotated_host(ctx, node.value)
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            return _visibly_host(ctx, Value(node.left, value.env), depth + 1)  # `span > 0`
        if isinstance(node, cst.BinaryOperation):
            return _visibly_host(ctx, Value(node.left, value.env), depth + 1) and _visibly_host(
                ctx, Value(node.right, value.env), depth + 1
            )
        return False
    return False


def array_file(ctx: Context) -> bool:
    """The file imports NumPy (or CuPy, JAX) and nothing from torch: its arrays are not
    tensors (a NumPy library, a metrics module working on host arrays)."""
    targets = [*ctx.imports.values(), *ctx.star_imports]
    arrays = any(t.split(".")[0] in _ARRAY_MODULES for t in targets)
    return arrays and not any(t.split(".")[0] == "torch" for t in targets)


_ARRAY_MODULES = frozenset({"numpy", "cupy", "jax"})


def _annotated_host(ctx: Context, name: str) -> bool:
    """A parameter of the enclosing function annotated as a NumPy array or a Python number
    (`n: int`, `scale: float`; not `Optional[int]`, which may hold anything)."""
    param = ctx.parameter(name)
    if param is None or param.annotation is None:
        return False
    ann = param.annotation.annotation
    if isinstance(ann, cst.Name) and ann.value in _NUMBER_ANNOTATIONS:
        return ctx.lookup(ann.value) is None  # the builtin, not a class of the same name
    if isinstance(ann, cst.Subscript):
        ann = ann.value
    qual = ctx.qualname(ann) if isinstance(ann, (cst.Name, cst.Attribute)) else None
    return qual is not None and qual.startswith(_NUMPY_ANNOTATIONS)


#: Annotations of Python numbers: dividing them by 0 raises, it gives no NaN.
_NUMBER_ANNOTATIONS = frozenset({"int", "float", "bool"})
