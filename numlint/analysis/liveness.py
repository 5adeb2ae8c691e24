"""Can the code at a node run? A value hazard in code that cannot run is not a finding.

Facts of the program, not of names:

- a branch behind a constant: `if False:`, `if DEBUG:` with `DEBUG = False` bound once (in the
  function, or at module level and never rebound), `if merge:` for a parameter whose default
  is a constant that no caller overrides (also compared with a literal: `if mode == "l2":`,
  `if k in (1, 2):`), `if cf is not None:` for a `cf=None` no caller passes; an `else` arm
  behind a true one;
- an option no caller passes: the hazard's own operand is built from a parameter that is
  `None` at every known call (the expression would fail before producing a bad value);
- a function or class nothing refers to: a private one (`_helper`) or a nested one whose name
  appears nowhere else in the project's files; in a repository checkout (`.git`) that is no
  distribution (no `[project]`, setup.py or setup.cfg: scripts and research code), a public
  one too. A file that imports a sibling module missing from disk is part of a package
  numlint sees in part: its module-level private functions and classes stay reachable. A
  distribution's public functions are its API and count as reachable, as do decorated ones
  (registered by their decorator), dunder methods, tests, and public methods (a framework may
  call them by name).
"""

from __future__ import annotations

import ast
import operator
import os
import re
from functools import lru_cache

import libcst as cst

from numlint.analysis.context import Context, Value
from numlint.analysis.ops import names
from numlint.analysis.summaries import file_text, never_passed, project_files, project_root
from numlint.tree import every_field, is_node


def dead_code(ctx: Context, node: cst.CSTNode) -> bool:
    """Whether the code at `node` (being visited) cannot run: see the module docstring."""
    return _behind_constant(ctx) or _unused_operand(ctx, node) or _unreferenced(ctx)


# ---- branches behind a constant ----


def _behind_constant(ctx: Context) -> bool:
    stack = ctx.stack
    for i in range(len(stack) - 2, -1, -1):
        parent, child = stack[i], stack[i + 1]
        if isinstance(parent, cst.If):
            if child is parent.body and truth(ctx, parent.test) is False:
                return True
            if child is parent.orelse and truth(ctx, parent.test) is True:
                return True
        elif isinstance(parent, cst.While) and child is parent.body:
            if truth(ctx, parent.test) is False:
                return True
    return False


def truth(ctx: Context, test: cst.BaseExpression) -> bool | None:
    """The truth of a test whose value the program fixes, else None."""
    if isinstance(test, cst.Name):
        if test.value in ("True", "False", "None"):
            return test.value == "True"
        return _name_truth(ctx, test.value)
    if isinstance(test, (cst.Integer, cst.Float)):
        return float(test.evaluated_value) != 0
    if isinstance(test, cst.SimpleString):
        return bool(test.evaluated_value)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = truth(ctx, test.expression)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        left, right = truth(ctx, test.left), truth(ctx, test.right)
        if isinstance(test.operator, cst.And):
            if left is False or right is False:
                return False
            return True if left and right else None
        if left is True or right is True:
            return True
        return False if left is False and right is False else None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if isinstance(target.comparator, cst.Name) and target.comparator.value == "None":
            if isinstance(target.operator, (cst.Is, cst.IsNot)):
                is_none = _always_none(ctx, test.left)
                if is_none is None:
                    return None
                return is_none if isinstance(target.operator, cst.Is) else not is_none
        return _compared(ctx, test.left, target.operator, target.comparator)
    return None


_COMPARE = {
    cst.Equal: operator.eq, cst.NotEqual: operator.ne, cst.LessThan: operator.lt,
    cst.LessThanEqual: operator.le, cst.GreaterThan: operator.gt,
    cst.GreaterThanEqual: operator.ge,
}  # fmt: skip


def _compared(
    ctx: Context, left: cst.BaseExpression, op: cst.BaseCompOp, right: cst.BaseExpression
) -> bool | None:
    """`mode == "l2"`, `k > 1`, `norm in ("l2", "cos")` where the name holds a constant
    wherever this runs (a default no caller overrides, a module constant) and the other side
    is a literal: the comparison's value, else None."""
    if not isinstance(left, cst.Name):
        return None
    value, other = _constant_of(ctx, left.value), _literal_or_tuple(right)
    if value is _NOT_CONSTANT or other is _NOT_CONSTANT:
        return None
    try:
        if isinstance(op, (cst.In, cst.NotIn)):
            inside = value in other  # type: ignore[operator]
            return inside if isinstance(op, cst.In) else not inside
        compare = _COMPARE.get(type(op))
        return None if compare is None else bool(compare(value, other))
    except TypeError:
        return None  # `None > 1`: the program would fail here, not take a branch


def _literal_or_tuple(expr: cst.BaseExpression) -> object:
    """A literal, or a tuple, list or set of literals."""
    if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
        items = [_literal(e.value) for e in expr.elements]
        return _NOT_CONSTANT if _NOT_CONSTANT in items else tuple(items)
    return _literal(expr)


def _always_none(ctx: Context, expr: cst.BaseExpression) -> bool | None:
    """True: `expr` is None wherever this runs; False: never None; None: unknown."""
    if isinstance(expr, cst.Name):
        constant = _constant_of(ctx, expr.value)
        if constant is not _NOT_CONSTANT:
            return constant is None
    return None


class _NotConstant:
    pass


_NOT_CONSTANT = _NotConstant()


def _name_truth(ctx: Context, name: str) -> bool | None:
    constant = _constant_of(ctx, name)
    return None if constant is _NOT_CONSTANT else bool(constant)


def _constant_of(ctx: Context, name: str) -> object:
    """The constant `name` holds wherever the code being visited runs, or _NOT_CONSTANT."""
    func = ctx.function
    if func is not None:
        param = ctx.parameter(name)
        if param is not None:
            if param.default is None or _assignments(ctx, func, name):
                return _NOT_CONSTANT
            literal = _literal(param.default)
            if literal is _NOT_CONSTANT or not never_passed(ctx, name):
                return _NOT_CONSTANT
            return literal
        count = _assignments(ctx, func, name)
        if count:
            binding = ctx.lookup(name)
            if count != 1 or binding is None or binding.value is None or binding.alternatives:
                return _NOT_CONSTANT
            return _literal(binding.value)
        if any(isinstance(s, cst.FunctionDef) and s is not func for s in ctx.stack[:-1]):
            return _NOT_CONSTANT  # a closure's free name: the enclosing function may rebind it
    return _module_constant(ctx, name)


def _assignments(ctx: Context, func: cst.FunctionDef, name: str) -> int:
    """How many statements of `func` bind `name` (a `global`/`nonlocal` counts as many);
    counted once per function of the file (kept with the file: a cache across files would
    keep their trees alive)."""
    known = ctx.shared.setdefault("binding_counts", {})
    entry = known.get(id(func))
    if entry is None or entry[0] is not func:
        entry = known[id(func)] = (func, _binding_counts(func))
    return entry[1].get(name, 0)  # type: ignore[no-any-return]


def _binding_counts(func: cst.FunctionDef) -> dict[str, int]:
    counts: dict[str, int] = {}

    def add(target: cst.CSTNode, times: int) -> None:
        for n in _bound_names(target):
            counts[n] = counts.get(n, 0) + times

    # Every node of the body (order does not matter for counts), read from its fields:
    # libcst's own visit rebuilds each node it passes.
    todo: list[cst.CSTNode] = [func.body]
    while todo:
        node = todo.pop()
        kind = type(node)
        if kind is cst.AssignTarget or kind is cst.NamedExpr:
            add(node.target, 1)  # type: ignore[attr-defined]
        elif kind is cst.AnnAssign:
            if node.value is not None:  # type: ignore[attr-defined]
                add(node.target, 1)  # type: ignore[attr-defined]
        elif kind is cst.AugAssign or kind is cst.For or kind is cst.CompFor:
            add(node.target, 2)  # type: ignore[attr-defined]
        elif kind is cst.AsName:
            add(node.name, 2)  # type: ignore[attr-defined]
        elif kind is cst.Global or kind is cst.Nonlocal:
            for item in node.names:  # type: ignore[attr-defined]
                counts[item.name.value] = counts.get(item.name.value, 0) + 2
        for name in every_field(kind):
            value = getattr(node, name)
            if type(value) in (list, tuple):
                todo.extend(child for child in value if is_node(type(child)))
            elif is_node(type(value)):
                todo.append(value)
    return counts


def _bound_names(target: cst.CSTNode) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _bound_names(e.value)]
    if isinstance(target, cst.StarredElement):
        return _bound_names(target.value)
    return []


def _literal(expr: cst.BaseExpression) -> object:
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[expr.value]
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)):
        return expr.evaluated_value
    return _NOT_CONSTANT


def _module_constant(ctx: Context, name: str) -> object:
    """A module-level name bound once to a literal, never rebound (no `global` of it, not
    assigned as an attribute elsewhere in the file), else _NOT_CONSTANT."""
    tree = ctx.syntax
    if tree is None:
        return _NOT_CONSTANT
    constants = ctx.shared.get("module_constants")
    if constants is None:  # once per file (kept with it, as its tree is)
        constants = ctx.shared["module_constants"] = _module_constants(tree, ctx.source or "")
    return constants.get(name, _NOT_CONSTANT)


def _module_constants(tree: ast.Module, source: str) -> dict[str, object]:
    bound: dict[str, list[ast.expr | None]] = {}
    for stmt in tree.body:
        for sub in ast.walk(stmt) if not isinstance(stmt, ast.Assign) else [stmt]:
            if isinstance(sub, ast.Assign):
                for t in sub.targets:
                    for n in _ast_names(t):
                        bound.setdefault(n, []).append(
                            sub.value if isinstance(t, ast.Name) else None
                        )
            elif isinstance(sub, (ast.AugAssign, ast.AnnAssign, ast.For, ast.NamedExpr)):
                for n in _ast_names(sub.target):
                    bound.setdefault(n, []).extend([None, None])
            elif isinstance(sub, (ast.Global, ast.Nonlocal)):
                for n in sub.names:
                    bound.setdefault(n, []).extend([None, None])
            elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                for alias in sub.names:
                    bound.setdefault((alias.asname or alias.name).split(".")[0], []).append(None)
            elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.setdefault(sub.name, []).append(None)
    out: dict[str, object] = {}
    for name, values in bound.items():
        if len(values) != 1 or values[0] is None or not isinstance(values[0], ast.Constant):
            continue
        if re.search(rf"\.{re.escape(name)}\s*=[^=]", source):
            continue  # `config.DEBUG = True` somewhere: set from outside
        out[name] = values[0].value
    return out


def _ast_names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _ast_names(e)]
    if isinstance(target, ast.Starred):
        return _ast_names(target.value)
    return []


# ---- an operand no caller provides ----


def _unused_operand(ctx: Context, node: cst.CSTNode) -> bool:
    """The hazard's operand is an unused option (`unused_option`): it would fail first."""
    return isinstance(node, cst.BaseExpression) and unused_option(ctx, ctx.value(node))


def unused_option(ctx: Context, value: Value) -> bool:
    """The value is built from a parameter defaulting to None that every known caller leaves
    out: the code that uses it does not run."""
    found = _operand_names(ctx, value.node) | _operand_names(ctx, ctx.deref(value).node)
    for name in found:
        param = ctx.parameter(name) if "." not in name else None
        binding = ctx.lookup(name, value.env) if param is not None else None
        if binding is not None and binding.value is not None:
            continue  # `dims = x.ndim - 1 if dims is None else dims`: the None is replaced
        default = param.default if param is not None else None
        if isinstance(default, cst.Name) and default.value == "None" and never_passed(ctx, name):
            return True
    return False


#: torch functions whose positional arguments are all tensors (elsewhere only the first is).
_DATA_ARGS = frozenset(
    {"add", "sub", "mul", "div", "true_divide", "matmul", "mm", "bmm", "where", "maximum",
     "minimum", "dist", "cdist", "atan2", "pow", "dot", "einsum", "xlogy"}
)  # fmt: skip


def _operand_names(ctx: Context, node: cst.CSTNode) -> set[str]:
    """The names a None would make the expression fail on: operands, method receivers,
    subscripted values and a torch function's positional inputs, also inside any argument
    (`start_dim=-dims`); not a name passed on as an option (`x.sum(axis=axis)`: None is a
    valid value there) nor to another function."""
    if isinstance(node, cst.Call):
        func = node.func
        found: set[str] = set()
        if isinstance(func, cst.Attribute) and (
            (ctx.qualname(func) or "").split(".")[0] not in ("torch", "numpy", "math")
        ):
            found |= _operand_names(ctx, func.value)  # `cf.sum()`: the receiver
        elif (qualname := ctx.qualname(func) or "").startswith("torch."):
            data = node.args if qualname.rsplit(".", 1)[-1] in _DATA_ARGS else node.args[:1]
            for arg in data:
                if arg.keyword is None:
                    found |= _operand_names(ctx, arg.value)  # `torch.log(cf)`, not its dim
        for arg in node.args:
            if not isinstance(arg.value, (cst.Name, cst.Attribute)):
                found |= _operand_names(ctx, arg.value)  # `start_dim=-dims` fails on None
        return found
    if isinstance(node, (cst.Name, cst.Attribute)):
        return names(node)
    if isinstance(node, cst.Subscript):
        return _operand_names(ctx, node.value)
    if isinstance(node, cst.BinaryOperation):
        return _operand_names(ctx, node.left) | _operand_names(ctx, node.right)
    if isinstance(node, cst.UnaryOperation):
        return _operand_names(ctx, node.expression)
    return names(node)


# ---- functions and classes nothing refers to ----

_DISTRIBUTION = re.compile(r"^\s*\[(project|tool\.poetry)\]", re.M)


def _unreferenced(ctx: Context) -> bool:
    """An enclosing function or class that nothing in the project refers to."""
    if ctx.path.startswith("<") or ctx.source is None:
        return False
    defs = [n for n in ctx.stack[:-1] if isinstance(n, (cst.FunctionDef, cst.ClassDef))]
    for depth, node in enumerate(defs):
        name = node.name.value
        if node.decorators or (name.startswith("__") and name.endswith("__")):
            continue  # registered by a decorator; called by Python itself
        if name.startswith("test") or name == "main":
            continue  # an entry point
        nested = depth > 0 and isinstance(defs[depth - 1], cst.FunctionDef)
        method = depth > 0 and isinstance(defs[depth - 1], cst.ClassDef)
        private = name.startswith("_")
        if not (private or nested) and (method or _distribution(ctx.path)):
            continue  # a public method or a distribution's API
        if depth == 0 and _partial_package(ctx):
            continue  # `_Net` of `core.py`: a module numlint is not given may import it
        if not _referenced(ctx, name):
            return True
    return False


def _referenced(ctx: Context, name: str) -> bool:
    """Whether `name` appears anywhere in the project's files besides its definitions."""
    word = re.compile(rf"\b{re.escape(name)}\b")
    defined = re.compile(rf"\b(def|class)\s+{re.escape(name)}\b")
    source = ctx.source or ""
    if len(word.findall(source)) > len(defined.findall(source)):
        return True
    files, _ = project_files(project_root(os.path.abspath(ctx.path)))
    here = os.path.abspath(ctx.path)
    for path in files:
        if path == here:
            continue
        text = file_text(path)
        if text is None or name not in text:
            continue
        if len(word.findall(text)) > len(defined.findall(text)):
            return True
    return False


@lru_cache(maxsize=256)
def _distribution_root(root: str) -> bool:
    if os.path.exists(os.path.join(root, "setup.py")) or os.path.exists(
        os.path.join(root, "setup.cfg")
    ):
        return True
    try:
        with open(os.path.join(root, "pyproject.toml"), encoding="utf-8") as f:
            return bool(_DISTRIBUTION.search(f.read()))
    except (OSError, UnicodeDecodeError):
        return False


def _partial_package(ctx: Context) -> bool:
    """The file imports a sibling module that is not on disk (`from .embedding import ...`
    without `embedding.py`): numlint sees part of a package, and the modules it does not see
    may use the file's private functions and classes. Once per file."""
    known = ctx.shared.get("partial_package")
    if known is None:
        known = ctx.shared["partial_package"] = _missing_sibling(ctx.path, ctx.syntax)
    return bool(known)


def _missing_sibling(path: str, tree: ast.Module | None) -> bool:
    """A relative import in `tree` whose module is neither a file nor a directory, resolved
    against the file's directory as Python does."""
    here = os.path.dirname(os.path.abspath(path))
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.ImportFrom) and node.level and node.module:
            base = here
            for _ in range(node.level - 1):
                base = os.path.dirname(base)
            target = os.path.join(base, *node.module.split("."))
            if not (os.path.exists(target + ".py") or os.path.isdir(target)):
                return True
    return False


def _distribution(path: str) -> bool:
    """Whether the file's public functions may be called from outside the files numlint
    sees: a project packaged for others to import, or anything but a whole repository
    checkout (a lone file or directory may be imported from anywhere, a notebook too)."""
    root = project_root(os.path.abspath(path))
    if not os.path.exists(os.path.join(root, ".git")):
        return True
    return _distribution_root(root)
