"""Values computed only from settings: literals, module constants, parameters that are
Python numbers (`size: int`, `sigma: float | Tensor`, `alpha=0.5`), deterministic torch,
math and NumPy functions of them, and helpers of the project (nested or top-level) called
with them. Such a value is the same on every call with the same settings: a 0 in it shows
on the first run, not at some later batch. Read on CPython's ast through the project's
summaries, so that helpers in other functions and files can be followed."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from numlint.analysis.names import bound_names, parameters
from numlint.analysis.summaries import Function, Module, Project, argument, function_key

#: Builtins whose result is a setting when their arguments are.
_BUILTINS = frozenset(
    {"range", "len", "int", "float", "bool", "list", "tuple", "min", "max", "abs", "sum",
     "round", "enumerate", "zip", "sorted", "reversed", "pow", "divmod"}
)  # fmt: skip
#: Attributes of a setting that are settings too.
_ATTRIBUTES = frozenset({"shape", "device", "dtype", "T", "mT", "real", "imag", "ndim"})
#: Functions that read data from outside the program.
_READERS = frozenset({"load", "loadtxt", "fromfile", "from_file", "genfromtxt", "read_csv"})
_LIBRARIES = frozenset(
    {"torch", "math", "cmath", "numpy", "scipy", "fractions", "decimal", "itertools", "operator"}
)
_NUMBER_TYPES = frozenset({"int", "float", "bool", "complex", "str"})
#: Keywords that place or type a result without giving it values.
_PLACEMENT = frozenset(
    {"device", "dtype", "layout", "requires_grad", "memory_format", "pin_memory"}
)
_DEPTH = 100
_STEPS = 5000


def settings_only(ctx: object, expr: object) -> bool:
    """Whether a libcst expression of the code being linted is computed only from settings
    (see the module docstring)."""
    project = ctx.project  # type: ignore[attr-defined]
    if project is None or project.main is None:
        return False
    try:
        code = ctx.code(expr).strip()  # type: ignore[attr-defined]
        tree = ast.parse(f"({code})", mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return False
    func = function_key(ctx)
    mod = project.main
    f = mod.functions.get(func) if func else None
    reader = _Reader(project)
    for name in _nested_names(ctx):  # inside `def sinc(x):` of `notch`: read there
        found = reader._function(mod, name, f, frozenset()) if f is not None else None
        f = found[1] if found is not None and found[0] is mod else None
    return reader.value(mod, tree, f, frozenset(), 0)


def _nested_names(ctx: object) -> list[str]:
    """The names of the functions defined inside the top-level function or method being
    visited that hold the current node, outermost first."""
    import libcst as cst

    names = [n.name.value for n in ctx.stack if isinstance(n, cst.FunctionDef)]  # type: ignore[attr-defined]
    return names[1:]


class _Reader:
    def __init__(self, project: Project) -> None:
        self.project = project
        self.steps = 0
        #: Names being read: a write that reads the name again assumes it is a setting.
        self.active: set[tuple[int, str, frozenset[str]]] = set()
        self.assumed = 0
        self.known: dict[tuple[int, str, frozenset[str]], bool] = {}
        self.nested: dict[int, Function] = {}
        #: A nested function (by id) -> the function around it and its settings names.
        self.outer: dict[int, tuple[Function, frozenset[str]]] = {}

    def value(
        self, mod: Module, e: ast.expr, f: Function | None, bound: frozenset[str], depth: int
    ) -> bool:
        self.steps += 1
        if depth > _DEPTH or self.steps > _STEPS:
            return False

        def sub(x: ast.expr) -> bool:
            return self.value(mod, x, f, bound, depth + 1)

        if isinstance(e, ast.Constant):
            return True
        if isinstance(e, (ast.Tuple, ast.List, ast.Set)):
            return all(sub(x) for x in e.elts)
        if isinstance(e, ast.UnaryOp):
            return sub(e.operand)
        if isinstance(e, ast.BinOp):
            return sub(e.left) and sub(e.right)
        if isinstance(e, ast.BoolOp):
            return all(sub(x) for x in e.values)
        if isinstance(e, ast.Compare):
            return sub(e.left) and all(sub(x) for x in e.comparators)
        if isinstance(e, ast.IfExp):
            return sub(e.body) and sub(e.orelse)
        if isinstance(e, ast.Subscript):
            return sub(e.value) and sub(e.slice)
        if isinstance(e, ast.Slice):
            return all(sub(x) for x in (e.lower, e.upper, e.step) if x is not None)
        if isinstance(e, ast.Starred):
            return sub(e.value)
        if isinstance(e, ast.Attribute):
            if e.attr in _ATTRIBUTES:
                return sub(e.value)
            qual = self.project.qualname(mod, e)  # `math.pi`, `torch.float32`
            return qual is not None and qual.split(".")[0] in ("torch", "math", "numpy")
        if isinstance(e, (ast.ListComp, ast.GeneratorExp)):
            inner = set(bound)
            for gen in e.generators:
                if not sub(gen.iter):
                    return False
                inner.update(bound_names(gen.target))
            return self.value(mod, e.elt, f, frozenset(inner), depth + 1)
        if isinstance(e, ast.Name):
            return self._name(mod, e.id, f, bound, depth)
        if isinstance(e, ast.Call):
            return self._call(mod, e, f, bound, depth)
        return False

    def _name(
        self, mod: Module, name: str, f: Function | None, bound: frozenset[str], depth: int
    ) -> bool:
        if f is None:
            return self._global(mod, name, bound, depth)
        key = (id(f), name, bound)
        if key in self.known:
            return self.known[key]
        if key in self.active:
            self.assumed += 1
            return True  # `x = x * k`: x is a setting when every other write is one
        self.active.add(key)
        before = self.assumed
        try:
            found = self._name_of(mod, name, f, bound, depth)
        finally:
            self.active.discard(key)
        if self.assumed == before:  # not resting on an assumption made in a cycle
            self.known[key] = found
        return found

    def _name_of(
        self, mod: Module, name: str, f: Function, bound: frozenset[str], depth: int
    ) -> bool:
        def sub(x: ast.expr) -> bool:
            return self.value(mod, x, f, bound, depth + 1)

        sources = list(_writes(f, name))
        if name in bound or name in f.params:  # a parameter: given settings, or one itself
            if name not in bound and not _setting_parameter(f, name):
                if not self._passed_settings(mod, f, name):
                    return False
            return all(sub(v) for v in sources)
        if not sources and id(f) in self.outer:  # a free name of a nested function
            around, names = self.outer[id(f)]
            return self._name(mod, name, around, names, depth + 1)
        if not sources:
            return self._global(mod, name, bound, depth)
        return all(sub(v) for v in sources)

    def _global(self, mod: Module, name: str, bound: frozenset[str], depth: int) -> bool:
        """A module-level name every assignment of which is a setting."""
        values = mod.globals.get(name)
        return bool(values) and all(self.value(mod, v, None, bound, depth + 1) for v in values)

    def _passed_settings(self, mod: Module, f: Function, name: str) -> bool:
        """Every known caller of `f` passes a number literal as `name` (`notch_filter(0.25)`;
        not a tensor a test builds: users may pass data); for a function nested in another,
        every call of it there passes a setting (`sinc(3 * freq * grid)`)."""
        if id(f) in self.outer:  # a nested function: its calls in the one around it
            around, names = self.outer[id(f)]
            index = f.params.index(name)
            args = [
                argument(node, index, name)
                for node in ast.walk(around.node)
                if isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == f.node.name
            ]
            return bool(args) and all(
                a is not None and self.value(mod, a, around, names, 1) for a in args
            )
        if f.cls is not None:
            return False
        index = f.params.index(name)
        calls = self.project.known_calls(mod, f)
        args = [argument(call, index, name) for _, _, call in calls]
        return bool(args) and all(_number_literal(a) for a in args)

    def _call(
        self, mod: Module, call: ast.Call, f: Function | None, bound: frozenset[str], depth: int
    ) -> bool:
        def sub(x: ast.expr) -> bool:
            return self.value(mod, x, f, bound, depth + 1)

        args = [*call.args, *(k.value for k in call.keywords if k.arg not in _PLACEMENT)]
        fn = call.func
        qual = self._library(mod, fn) or self._local_import(fn, f)
        if qual is not None:
            return qual.rsplit(".", 1)[-1] not in _READERS and all(sub(a) for a in args)
        if isinstance(fn, ast.Attribute):
            if self.project.qualname(mod, fn) is not None:
                return False  # a function of another library
            return sub(fn.value) and all(sub(a) for a in args)
        if not isinstance(fn, ast.Name):
            return False
        if fn.id in _BUILTINS and (f is None or fn.id not in f.assigned):
            return all(sub(a) for a in args)
        if not all(sub(a) for a in args):
            return False
        callee = self._function(mod, fn.id, f, bound)
        if callee is None:
            return False
        cmod, cf = callee
        returns = list(_own_returns(cf.node))
        params = frozenset(cf.params)
        return bool(returns) and all(self.value(cmod, r, cf, params, depth + 1) for r in returns)

    def _library(self, mod: Module, fn: ast.expr) -> str | None:
        """The torch, math, NumPy or SciPy function `fn` names, also through a project's
        alias of one (`tensor = torch.tensor` in a package's `core`)."""
        qual = self.project.qualname(mod, fn)
        if qual is not None and qual.split(".")[0] in _LIBRARIES:
            return qual
        if not isinstance(fn, ast.Name):
            return None
        target = self.project.lookup(mod, fn.id)
        if target is None or target[1] not in target[0].globals:
            return None
        tmod, name = target
        values = tmod.globals[name]
        quals = [self.project.qualname(tmod, v) for v in values]
        if values and all(q is not None and q.split(".")[0] in _LIBRARIES for q in quals):
            return quals[0]
        return None

    def _local_import(self, fn: ast.expr, f: Function | None) -> str | None:
        """A library function imported inside the function or one around it (`from math
        import factorial` in the body)."""
        while f is not None and isinstance(fn, ast.Name):
            for node in ast.walk(f.node):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    for alias in node.names:
                        if (alias.asname or alias.name) == fn.id:
                            qual = f"{node.module}.{alias.name}"
                            return qual if qual.split(".")[0] in _LIBRARIES else None
            f = self.outer[id(f)][0] if id(f) in self.outer else None
        return None

    def _function(
        self, mod: Module, name: str, f: Function | None, bound: frozenset[str]
    ) -> tuple[Module, Function] | None:
        """A function defined inside `f`, or a top-level function of the project."""
        if f is not None:
            for node in ast.walk(f.node):
                if isinstance(node, ast.FunctionDef) and node.name == name and node is not f.node:
                    found = self.nested.get(id(node))
                    if found is None:
                        found = self.nested[id(node)] = Function(node, None)
                        self.outer[id(found)] = (f, bound)
                    return mod, found
        target = self.project.lookup(mod, name)
        if target is None or target[1] not in target[0].functions:
            return None
        return target[0], target[0].functions[target[1]]


def _setting_parameter(f: Function, name: str) -> bool:
    """A parameter annotated as a Python number (also in a union with a tensor: `float |
    Tensor`), or unannotated with a number default, or of a cached function (its arguments
    are hashable settings)."""
    annotation = f.annotations.get(name)
    if annotation is not None:
        return _setting_annotation(annotation)
    if any("cache" in ast.unparse(d) for d in f.node.decorator_list):
        return True
    default = next((d for a, d in parameters(f.node.args) if a.arg == name), None)
    if isinstance(default, ast.UnaryOp):
        default = default.operand
    return isinstance(default, ast.Constant) and isinstance(default.value, (int, float, str))


def _setting_annotation(node: ast.expr) -> bool:
    """`int`, `str`, `tuple[int, int] | int`, `Optional[float]`, `float | Tensor`: a number,
    a string, a sequence of them, or a union with one (not `dict[str, Tensor]`)."""
    if isinstance(node, ast.Name | ast.Attribute):
        return (node.id if isinstance(node, ast.Name) else node.attr) in _NUMBER_TYPES
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _setting_annotation(node.left) or _setting_annotation(node.right)
    if not isinstance(node, ast.Subscript):
        return False
    base = node.value.id if isinstance(node.value, ast.Name) else getattr(node.value, "attr", "")
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    items = [i for i in items if not (isinstance(i, ast.Constant) and i.value is Ellipsis)]
    if base in ("Optional", "Union"):
        return any(_setting_annotation(i) for i in items)
    if base in ("tuple", "Tuple", "list", "List", "Sequence"):
        return bool(items) and all(_setting_annotation(i) for i in items)
    return False


def _own_returns(func: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.expr]:
    """The values `func` itself returns (not those of functions nested in it)."""
    todo: list[ast.AST] = list(func.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return) and node.value is not None:
            yield node.value
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


def _number_literal(node: ast.expr | None) -> bool:
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float))


def _writes(f: Function, name: str) -> Iterator[ast.expr]:
    """Every value written to `name` in `f`: assignments, augmented assignments, stores into
    its entries, the iterables it loops over, and the arguments of methods called on it as
    statements (`out.append(v)`)."""
    for node in ast.walk(f.node):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if name in bound_names(t):
                    yield node.value
                elif isinstance(t, ast.Subscript) and _is(t.value, name):
                    yield node.value
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            t = node.target
            if _is(t, name) or (isinstance(t, ast.Subscript) and _is(t.value, name)):
                yield node.value
        elif isinstance(node, (ast.For, ast.comprehension)) and name in bound_names(node.target):
            yield node.iter
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            fn = node.value.func
            if isinstance(fn, ast.Attribute) and _is(fn.value, name):
                yield from node.value.args
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None and name in bound_names(item.optional_vars):
                    yield item.context_expr


def _is(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name
