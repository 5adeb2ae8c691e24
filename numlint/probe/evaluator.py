"""Evaluate a checked expression on sample values: a tree walk over whitelisted torch calls.

No `eval`, no `exec`: every function and attribute is looked up by a name from
numlint.probe.whitelist, on torch's own modules or on a value the walk produced itself.
"""

from __future__ import annotations

import ast
import builtins
import math
import operator
import re
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

import torch

from numlint.probe.whitelist import (
    CONSTANTS,
    FUNCTIONS,
    INFO_ATTRIBUTES,
    METHODS,
    MODULES,
    RESULT_FIELDS,
    TENSOR_ATTRIBUTES,
    Expression,
    NotProbeable,
)

#: Creation functions whose arguments set a size: capped so a probe cannot allocate much.
_SIZED = {
    "torch.zeros", "torch.ones", "torch.full", "torch.empty", "torch.rand", "torch.randn",
    "torch.randint", "torch.eye", "torch.arange", "torch.linspace", "torch.logspace",
}  # fmt: skip
#: Largest tensor an expression may create or view (user expressions), and a rule's own
#: sample inputs.
MAX_ELEMENTS = 1 << 12
MAX_INPUT_ELEMENTS = 1 << 21
#: Methods and functions whose integer arguments are a shape or a size.
_SHAPED = {"expand", "broadcast_to", "reshape", "view", "expand_copy", "pad", "one_hot"}

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.MatMult: operator.matmul,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Invert: operator.invert,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_MODULE_ROOTS = {
    "torch": torch,
    "torch.nn": torch.nn,
    "torch.nn.functional": torch.nn.functional,
    "torch.special": torch.special,
    "torch.linalg": torch.linalg,
    "torch.Tensor": torch.Tensor,
    "math": math,
}


def _lookup(qualname: str) -> Any:
    """A whitelisted torch/math object by qualified name (the tables were checked before)."""
    module, _, attr = qualname.rpartition(".")
    root = _MODULE_ROOTS.get(module)
    if root is None:
        raise NotProbeable(f"`{qualname}` is not available")
    obj = getattr(root, attr, None)  # attr is from the whitelist tables
    if obj is None:
        raise NotProbeable(f"`{qualname}` is not in this torch version")
    return obj


@cache
def _modules() -> tuple[type, ...]:
    return tuple(t for q in sorted(MODULES) if isinstance(t := _lookup(q), type))


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, bool)) and not isinstance(v, torch.Tensor)


#: Strings `float()` may parse: a plain number (`"-1e10"`), inf or nan.
_NUMBER_TEXT = re.compile(
    r"^[+-]?(?:inf|infinity|nan|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)$", re.IGNORECASE
)


def _numel(args: tuple[Any, ...], qualname: str) -> float:
    nums = [a for a in args if _is_number(a)]
    if qualname == "torch.arange":
        if len(nums) == 1:
            return abs(nums[0])
        if len(nums) >= 2:
            step = nums[2] if len(nums) > 2 else 1
            return abs((nums[1] - nums[0]) / step) if step else math.inf
        return 0
    if qualname in ("torch.linspace", "torch.logspace"):
        return nums[2] if len(nums) > 2 else 100
    shaped = [a for a in args if isinstance(a, (tuple, list, torch.Size))]
    sizes: list[Any] = [s for a in shaped for s in a] if shaped else nums
    return math.prod(abs(int(s)) for s in sizes if _is_number(s))


class Evaluator:
    """Walks a checked Expression with values bound to its free names."""

    def __init__(
        self, expression: Expression, bindings: Mapping[str, Any], limit: int = MAX_ELEMENTS
    ) -> None:
        self.expression = expression
        self.bindings = bindings
        self.limit = limit

    def run(self) -> Any:
        return self.eval(self.expression.tree)

    def eval(self, node: ast.expr) -> Any:
        qual = self.expression.resolved.get(id(node))
        if qual is not None:
            return self._resolved(qual)
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise NotProbeable(f"{type(node).__name__} expressions are not probed")
        return method(node)

    def _resolved(self, qual: str) -> Any:
        if qual.startswith("builtins."):
            return getattr(builtins, qual.split(".", 1)[1])  # float/int/abs/min/max/bool
        if qual in CONSTANTS or qual in FUNCTIONS or qual in MODULES:
            return _lookup(qual)
        if qual.startswith("torch.Tensor."):
            return _lookup(qual)
        raise NotProbeable(f"`{qual}`")

    def _Constant(self, node: ast.Constant) -> Any:
        return node.value

    def _Name(self, node: ast.Name) -> Any:
        if node.id not in self.bindings:
            raise NotProbeable(f"no sample value for `{node.id}`")
        return self.bindings[node.id]

    def _Tuple(self, node: ast.Tuple) -> tuple[Any, ...]:
        return tuple(self.eval(e) for e in node.elts)

    def _List(self, node: ast.List) -> list[Any]:
        return [self.eval(e) for e in node.elts]

    def _Slice(self, node: ast.Slice) -> slice:
        parts = [None if p is None else self.eval(p) for p in (node.lower, node.upper, node.step)]
        return slice(*parts)

    def _Subscript(self, node: ast.Subscript) -> Any:
        value = self.eval(node.value)
        if not isinstance(value, (torch.Tensor, tuple, list, torch.Size)):
            raise NotProbeable(f"subscript of {type(value).__name__}")
        return value[self.eval(node.slice)]

    def _BinOp(self, node: ast.BinOp) -> Any:
        left, right = self.eval(node.left), self.eval(node.right)
        for v in (left, right):
            if not (isinstance(v, torch.Tensor) or _is_number(v)):
                raise NotProbeable(f"arithmetic on {type(v).__name__}")
        if isinstance(node.op, ast.Pow) and _is_number(left) and _is_number(right):
            if abs(right) > 1024 or abs(left) > 1e300:
                raise NotProbeable("power too large")
        return _BINARY[type(node.op)](left, right)

    def _UnaryOp(self, node: ast.UnaryOp) -> Any:
        v = self.eval(node.operand)
        if not (isinstance(v, torch.Tensor) or _is_number(v)):
            raise NotProbeable(f"arithmetic on {type(v).__name__}")
        return _UNARY[type(node.op)](v)

    def _Compare(self, node: ast.Compare) -> Any:
        left, right = self.eval(node.left), self.eval(node.comparators[0])
        for v in (left, right):
            if not (isinstance(v, torch.Tensor) or _is_number(v)):
                raise NotProbeable(f"comparison of {type(v).__name__}")
        return _COMPARE[type(node.ops[0])](left, right)

    def _Attribute(self, node: ast.Attribute) -> Any:
        value = self.eval(node.value)
        attr = node.attr
        if attr.endswith("_") and attr[:-1] in METHODS:
            attr = attr[:-1]  # in place -> out of place: the same values, leaves stay intact
        if isinstance(value, torch.Tensor):
            if attr in TENSOR_ATTRIBUTES or attr in METHODS:
                return getattr(value, attr)
        elif isinstance(value, (torch.finfo, torch.iinfo)):
            if attr in INFO_ATTRIBUTES:
                return getattr(value, attr)
        elif type(value).__module__ == "torch.return_types" and attr in RESULT_FIELDS:
            return getattr(value, attr)
        raise NotProbeable(f"`.{attr}` of {type(value).__name__}")

    def _Call(self, node: ast.Call) -> Any:
        func_node = node.func
        qual = self.expression.resolved.get(id(func_node))
        func = self.eval(func_node)
        if isinstance(func_node, ast.Call) and not isinstance(func, _modules()):
            raise NotProbeable("call of something that is not a whitelisted module")
        if not callable(func):
            raise NotProbeable(f"`{ast.unparse(func_node)}` is not callable")
        args = tuple(self.eval(a) for a in node.args)
        kwargs = {kw.arg: self.eval(kw.value) for kw in node.keywords if kw.arg}
        if qual is not None and qual.startswith("builtins."):
            for v in (*args, *kwargs.values()):
                if not (_is_number(v) or isinstance(v, (str, torch.Tensor))):
                    raise NotProbeable(f"`{qual[9:]}` of {type(v).__name__}")
            if qual in ("builtins.float", "builtins.int") and any(
                isinstance(a, str) and not _NUMBER_TEXT.match(a.strip()) for a in args
            ):
                raise NotProbeable("float() of a string other than a number, inf or nan")
        values = (*args, *kwargs.values())
        if qual in _SIZED and _numel(values, qual) > self.limit:
            raise NotProbeable("the expression creates a tensor too large to probe")
        name = (qual or ast.unparse(func_node)).rsplit(".", 1)[-1]
        if name in _SHAPED and _largest_size(values) > self.limit:
            raise NotProbeable("the expression builds a tensor too large to probe")
        return func(*args, **kwargs)


def _largest_size(values: tuple[Any, ...]) -> float:
    """The largest size an argument list could ask for (ints, and tuples of ints)."""
    sizes = [abs(v) for v in values if isinstance(v, int) and not isinstance(v, bool)]
    for v in values:
        if isinstance(v, (tuple, list, torch.Size)):
            ints = [abs(x) for x in v if isinstance(x, int)]
            sizes.append(math.prod(ints) if ints else 0)
            sizes.extend(ints)
    whole = math.prod(sizes) if sizes else 0
    return max([whole, *sizes])


def evaluate(expression: Expression, bindings: Mapping[str, Any], limit: int = MAX_ELEMENTS) -> Any:
    """The value of a checked expression with `bindings` for its free names."""
    return Evaluator(expression, bindings, limit).run()
