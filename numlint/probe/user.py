"""Probe the user's own flagged expression, never their code as a whole.

The flagged source range is parsed with `ast`, variables assigned earlier in the same
function are inlined only as deep as the rule's operations need (`p = F.softmax(z, -1)`
makes `torch.log(p)` into `torch.log(F.softmax(z, -1))`, and `z` stays an input even when
it was computed by other hazardous code), and the result is checked against the whitelist.
Parameter-free modules and functions stored on `self` (`self.sm = nn.Softmax(dim=1)`) and
function aliases are resolved; a model call (`self.proj(x)`) becomes a sample input; a name
the rule knows to be a softmax or sigmoid output made elsewhere becomes that operation of
sample logits. Free names get sample tensors from the rule's trigger inputs and from the
threshold table for the operations in view (numlint.probe.thresholds); the diagnostic's
fix, when it has one, runs on the same samples. Nothing from the file is imported or
executed.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from numlint.analysis.names import bound_names, module_imports, parameters
from numlint.diagnostic import Diagnostic
from numlint.engine import line_offsets
from numlint.probe import runner, templates, thresholds
from numlint.probe.roles import (
    DIM,
    EXPONENT,
    FLAG,
    INDEX,
    LABEL,
    MASK,
    NO_GRAD,
    POSITIONS,
    SIZE,
    TARGET,
    TENSOR,
    exponent_names,
    roles,
)
from numlint.probe.whitelist import (
    Expression,
    NotProbeable,
    compile_expression,
    dotted_parts,
    parse_expression,
)
from numlint.rule import Probe

Position = tuple[int, int]  # (line, column), 1-based line, 0-based column as ast gives


@dataclass
class FileInfo:
    """What the probe needs from one checked file: its tree, imports and dtype hints."""

    source: str
    tree: ast.Module | None
    imports: dict[str, str] = field(default_factory=dict)
    dtypes: tuple[str, ...] = ()


def file_info(source: str) -> FileInfo:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return FileInfo(source, None)
    return FileInfo(source, tree, module_imports(tree), dtype_hints(source))


_HALF = re.compile(r"\b(float16|half|fp16|autocast|GradScaler)\b")
_BF16 = re.compile(r"\b(bfloat16|bf16)\b")


def dtype_hints(source: str) -> tuple[str, ...]:
    """The reduced-precision dtypes a file mentions (float16 before bfloat16)."""
    hints = []
    if _HALF.search(source):
        hints.append("float16")
    if _BF16.search(source):
        hints.append("bfloat16")
    return tuple(hints)


def flagged(source: str, d: Diagnostic) -> tuple[str, str | None]:
    """The flagged source text and the same text with the finding's fix applied.

    Fix edits inside the flagged range are applied to it; when one edit covers more than
    the range (the fix rewrites the enclosing expression), that edit's range is probed.
    """
    offsets = line_offsets(source)
    if not (1 <= d.row <= len(offsets) and 1 <= d.end_row <= len(offsets)):
        raise NotProbeable("the finding's range is outside the file")

    def at(row: int, column: int) -> int:
        return offsets[row - 1] + column - 1

    start, end = at(d.row, d.column), at(d.end_row, d.end_column)
    edits = [
        (at(e.row, e.column), at(e.end_row, e.end_column), e.content)
        for e in (d.fix.edits if d.fix is not None else ())
    ]
    for s, e, content in edits:
        if s <= start and end <= e and (s, e) != (start, end):
            return source[s:e], content
    inside = [(s, e, c) for s, e, c in edits if start <= s and e <= end]
    text = source[start:end]
    if not inside:
        return text, None
    fixed = text
    for s, e, content in sorted(inside, reverse=True):
        fixed = fixed[: s - start] + content + fixed[e - start :]
    return text, fixed


# ---- inlining earlier assignments -----------------------------------------------------


@dataclass(frozen=True)
class _Def:
    """An assignment-like event for a name in a scope, in source order."""

    start: Position
    end: Position
    kind: str  # "value" | "param" | "unknown" | "mutation"
    value: ast.expr | None = None


def _pos(node: ast.AST, end: bool = False) -> Position:
    if end:
        return (node.end_lineno or 0, node.end_col_offset or 0)  # type: ignore[attr-defined]
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]


def _walk_scope(node: ast.AST) -> Iterator[ast.AST]:
    """Nodes of one scope: nested functions, classes and lambdas are not entered."""
    for child in ast.iter_child_nodes(node):
        yield child
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            yield from _walk_scope(child)


def _scope_defs(scope: ast.AST) -> dict[str, list[_Def]]:
    defs: dict[str, list[_Def]] = {}

    def add(name: str, d: _Def) -> None:
        defs.setdefault(name, []).append(d)

    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = scope.args
        for arg, default in parameters(args):
            constant = default is not None and _is_number(default)
            add(
                arg.arg,
                _Def(_pos(scope), _pos(scope), "value" if constant else "param", default),
            )
        for star in (args.vararg, args.kwarg):
            if star is not None:
                add(star.arg, _Def(_pos(scope), _pos(scope), "param"))
    for node in _walk_scope(scope):
        located = hasattr(node, "lineno") and hasattr(node, "end_lineno")
        start = _pos(node) if located else (0, 0)
        end = _pos(node, end=True) if located else (0, 0)
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    add(target.id, _Def(start, end, "value", node.value))
                elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    add(target.value.id, _Def(start, end, "mutation"))
                else:
                    for name in bound_names(target):
                        add(name, _Def(start, end, "unknown"))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            kind = "value" if node.value is not None else "unknown"
            add(node.target.id, _Def(start, end, kind, node.value))
        elif isinstance(node, ast.AugAssign):
            target = node.target
            if isinstance(target, ast.Name):
                value = ast.BinOp(ast.Name(target.id, ast.Load()), node.op, node.value)
                ast.copy_location(value, node)
                add(target.id, _Def(start, end, "value", value))
            elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                add(target.value.id, _Def(start, end, "mutation"))
        elif isinstance(node, ast.NamedExpr):
            add(node.target.id, _Def(start, end, "value", node.value))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            for name in bound_names(node.target):
                add(name, _Def(start, end, "unknown"))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            for name in bound_names(node.optional_vars):
                add(name, _Def(_pos(node.context_expr), _pos(node.context_expr), "unknown"))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                add((alias.asname or alias.name).split(".")[0], _Def(start, end, "unknown"))
        elif (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and isinstance(node.value.func.value, ast.Name)
            and node.value.func.attr.endswith("_")
            and not node.value.func.attr.startswith("_")
        ):
            add(node.value.func.value.id, _Def(start, end, "mutation"))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add(node.name, _Def(start, end, "unknown"))
    return defs


def _is_number(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


class _Scopes:
    """Scopes of a module and the definitions in each, computed once per file."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.functions = [
            n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        self.classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        self._defs: dict[int, dict[str, list[_Def]]] = {}

    def innermost(self, where: Position) -> ast.AST:
        best: ast.AST = self.tree
        for f in self.functions:
            if _pos(f) <= where <= _pos(f, end=True):
                if best is self.tree or _pos(f) >= _pos(best):
                    best = f
        return best

    def enclosing_class(self, where: Position) -> ast.ClassDef | None:
        best = None
        for c in self.classes:
            if _pos(c) <= where <= _pos(c, end=True) and (best is None or _pos(c) >= _pos(best)):
                best = c
        return best

    def defs(self, scope: ast.AST) -> dict[str, list[_Def]]:
        if id(scope) not in self._defs:
            self._defs[id(scope)] = _scope_defs(scope)
        return self._defs[id(scope)]

    def lookup(self, name: str, where: Position) -> _Def | None | str:
        """The last definition of `name` before `where`: None when free, "mutated" when the
        value was edited in place between its definition and `where`."""
        inner = self.innermost(where)
        for scope in (inner, self.tree) if inner is not self.tree else (self.tree,):
            events = self.defs(scope).get(name, [])
            if scope is inner:
                events = [e for e in events if e.end <= where]
            if not events:
                continue
            values = [i for i, e in enumerate(events) if e.kind != "mutation"]
            if not values or any(e.kind == "mutation" for e in events[values[-1] + 1 :]):
                return "mutated"
            return events[values[-1]]
        return None

    def enclosing(self, source: str, d: Diagnostic, levels: int = 4) -> Iterator[Diagnostic]:
        """The finding widened to each enclosing expression, innermost first."""
        lines = source.splitlines()
        if not 1 <= d.row <= len(lines) or not 1 <= d.end_row <= len(lines):
            return
        start = (d.row, len(lines[d.row - 1][: d.column - 1].encode("utf-8")))
        end = (d.end_row, len(lines[d.end_row - 1][: d.end_column - 1].encode("utf-8")))
        chain = [
            n
            for n in ast.walk(self.tree)
            if isinstance(n, ast.expr)
            and hasattr(n, "end_lineno")
            and _pos(n) <= start
            and end <= _pos(n, end=True)
            and (_pos(n), _pos(n, end=True)) != (start, end)
        ]
        chain.sort(key=lambda n: (_pos(n), _neg(_pos(n, end=True))), reverse=True)
        for node in chain[:levels]:
            (r, c), (er, ec) = _pos(node), _pos(node, end=True)
            yield dataclasses.replace(
                d,
                row=r,
                column=len(lines[r - 1].encode("utf-8")[:c].decode("utf-8", "replace")) + 1,
                end_row=er,
                end_column=len(lines[er - 1].encode("utf-8")[:ec].decode("utf-8", "replace")) + 1,
            )

    def self_attribute(
        self, attr: str, where: Position, imports: Mapping[str, str] | None = None
    ) -> ast.expr | None:
        """What `self.attr` holds in the enclosing class when it is assigned once: a numeric
        constant, or (given the file's imports) a parameter-free module built from the
        whitelist (`nn.Softmax(dim=1)`) or a whitelisted function (`F.softmax`)."""
        cls = self.enclosing_class(where)
        if cls is None:
            return None
        found = []
        for node in ast.walk(cls):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if (
                        isinstance(t, ast.Attribute)
                        and isinstance(t.value, ast.Name)
                        and t.value.id == "self"
                        and t.attr == attr
                    ):
                        found.append(node.value)
        if len(found) != 1:
            return None
        value = found[0]
        if isinstance(value, ast.Name):  # `self.eps = eps` with `eps=1e-10` in `__init__`
            value = _numeric_default(cls, value.id) or value
        if _is_number(value):
            return value
        if imports is not None and (_module_value(value, imports) or _function_ref(value, imports)):
            return value
        return None


def _numeric_default(cls: ast.ClassDef, name: str) -> ast.expr | None:
    """The numeric default of `__init__`'s parameter `name` (None when it has none)."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            for arg, default in parameters(node.args):
                if arg.arg == name and default is not None and _is_number(default):
                    return default
    return None


def _module_value(value: ast.expr, imports: Mapping[str, str]) -> bool:
    """`nn.Softmax(dim=1)`: a whitelisted module built from constants."""
    if not isinstance(value, ast.Call):
        return False
    try:
        return not compile_expression(value, imports).free
    except NotProbeable:
        return False


def _function_ref(value: ast.expr, imports: Mapping[str, str]) -> bool:
    """`torch.sigmoid`, `F.softmax`: a whitelisted function named, not called."""
    if not isinstance(value, (ast.Attribute, ast.Name)):
        return False
    try:
        compile_expression(ast.Call(value, [], []), imports)
    except NotProbeable:
        return False
    return True


def _neg(p: Position) -> Position:
    return (-p[0], -p[1])


class _Inliner(ast.NodeTransformer):
    """Replace names by the expressions last assigned to them (when those are probeable).

    `opaque` collects the names whose value comes from code that is not probed (a model
    call, a tuple unpacking, a loop variable): they stay free and get sample values.
    """

    def __init__(
        self,
        scopes: _Scopes,
        imports: Mapping[str, str],
        where: Position,
        depth: int,
        constants_only: bool = False,
        keep: frozenset[str] = frozenset(),
    ) -> None:
        self.keep = keep
        self.scopes = scopes
        self.imports = imports
        self.where = where
        self.depth = depth
        self.constants_only = constants_only
        self.opaque: list[str] = []

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            if f"self.{node.attr}" in self.keep:
                return node  # `(1 - p) ** self.gamma`: the caller's power stays an input
            value = self.scopes.self_attribute(node.attr, self.where, self.imports)
            if value is not None and not _function_ref(value, self.imports):
                return copy.deepcopy(value)
            return node
        self.generic_visit(node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        """`self.act(x)` with `self.act = torch.sigmoid`, `sm(x)` with `sm = F.softmax`: the
        function itself is called."""
        alias = self._function_alias(node.func)
        if alias is not None:
            node.func = alias
            node.args = [self.visit(a) for a in node.args]
            node.keywords = [self.visit(k) for k in node.keywords]
            return node
        self.generic_visit(node)
        return node

    def _function_alias(self, func: ast.expr) -> ast.expr | None:
        value: ast.expr | None = None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if func.value.id == "self":
                value = self.scopes.self_attribute(func.attr, self.where, self.imports)
        elif (
            isinstance(func, ast.Name) and func.id not in self.imports and func.id not in self.keep
        ):
            found = self.scopes.lookup(func.id, self.where)
            if isinstance(found, _Def) and found.kind == "value":
                value = found.value
        if value is not None and _function_ref(value, self.imports):
            return copy.deepcopy(value)
        return None

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.imports or node.id in self.keep:
            return node
        found = self.scopes.lookup(node.id, self.where)
        if found == "mutated":
            raise NotProbeable(f"`{node.id}` is modified in place before this use")
        if not isinstance(found, _Def) or found.kind == "param":
            return node
        if self.constants_only:
            value = found.value if found.kind == "value" else None
            return copy.deepcopy(value) if value is not None and _is_number(value) else node
        if found.kind != "value" or found.value is None or self.depth <= 0:
            self.opaque.append(node.id)
            return node
        value = copy.deepcopy(found.value)
        inner = _Inliner(self.scopes, self.imports, found.start, self.depth - 1)
        value = inner.visit(value)
        try:
            compile_expression(value, self.imports)
        except NotProbeable:
            self.opaque.append(node.id)
            return node
        self.opaque += inner.opaque
        return value


#: How many assignments deep a flagged expression is followed at most.
MAX_DEPTH = 4


def inline(
    tree: ast.expr,
    scopes: _Scopes,
    imports: Mapping[str, str],
    where: Position,
    constants_only: bool = False,
    depth: int = MAX_DEPTH,
    keep: frozenset[str] = frozenset(),
) -> ast.expr:
    """The tree with earlier assignments inlined (only numeric constants, if asked); names
    in `keep` stay as they are."""
    if constants_only:
        return _Inliner(scopes, imports, where, 0, True, keep).visit(copy.deepcopy(tree))
    return inline_tracking(tree, scopes, imports, where, depth, keep)[0]


def inline_tracking(
    tree: ast.expr,
    scopes: _Scopes,
    imports: Mapping[str, str],
    where: Position,
    depth: int = MAX_DEPTH,
    keep: frozenset[str] = frozenset(),
) -> tuple[ast.expr, list[str]]:
    """The tree with earlier assignments inlined `depth` levels deep, and the names left
    opaque (their values become sample inputs)."""
    inliner = _Inliner(scopes, imports, where, depth=depth, keep=keep)
    return inliner.visit(copy.deepcopy(tree)), inliner.opaque


#: Spellings counted as the same operation when matching a rule's hazard.
_SAME_OP = {
    "log1p": "log", "log2": "log", "log10": "log", "expit": "sigmoid",
    # module classes count as their functions (`nn.Softmax(dim=1)(x)` is a softmax)
    "Softmax": "softmax", "LogSoftmax": "log_softmax", "Softmin": "softmin",
    "Sigmoid": "sigmoid", "LogSigmoid": "logsigmoid", "Softplus": "softplus",
}  # fmt: skip
#: Operations that do not make a hazard: casts, shapes, constants.
_NEUTRAL = frozenset(
    """
    zeros_like ones_like full_like rand_like randn_like tensor as_tensor zeros ones full
    float double half bfloat16 to type_as contiguous detach clone reshape view view_as
    squeeze unsqueeze flatten transpose permute t expand expand_as finfo iinfo dim size
    numel item
    """.split()
)


def operations(expr: Expression) -> set[str]:
    """Names of the functions and methods an expression calls (`log`, `softmax`, ...)."""
    found = set()
    for node in ast.walk(expr.tree):
        if isinstance(node, ast.Call):
            func = node.func
            qual = expr.resolved.get(id(func))
            if qual:
                name = qual.rsplit(".", 1)[-1]
            elif isinstance(func, ast.Attribute):
                name = func.attr
            else:
                continue
            name = name[:-1] if name.endswith("_") and not name.startswith("_") else name
            if name not in _NEUTRAL:
                found.add(_SAME_OP.get(name, name))
    return found


# ---- sample bindings ------------------------------------------------------------------


@dataclass(frozen=True)
class Binding:
    values: Mapping[str, Any]
    label: str
    #: The dtypes whose thresholds this sample was made for (tried first in those).
    dtypes: tuple[str, ...] = ()


def _template_samples(probe: Probe) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
    return [
        ({k: runner.build_input(v) for k, v in case.items()}, dtypes)
        for case, dtypes in templates.dtype_cases(probe)
    ]


def _kind(v: Any) -> str:
    if isinstance(v, torch.Tensor):
        if v.is_floating_point():
            return "float"
        return "bool" if v.dtype == torch.bool else "long"
    return "number"


def _sample_role(v: Any) -> str:
    return {"float": TENSOR, "long": TARGET, "bool": MASK}.get(_kind(v), DIM)


def _default(r: str, first: torch.Tensor | None) -> Any:
    """A sample for a non-tensor role the rule's inputs do not provide."""
    if r == DIM:
        return -1
    if r == FLAG:
        return True
    if r == SIZE:
        return 16
    if r == EXPONENT:  # a power the caller sets: below 1 its slope at 0 is infinite
        return 0.5
    if r == TARGET:
        if first is not None and first.ndim >= 2:
            return torch.zeros(first.shape[0], dtype=torch.long)
        return torch.tensor(0)
    if r == INDEX:  # one index per row (gather), or one index (index_select)
        if first is not None and first.ndim >= 2:
            return torch.zeros((*first.shape[:-1], 1), dtype=torch.long)
        return torch.zeros(1, dtype=torch.long)
    if r == POSITIONS:  # integer indices into a tensor's rows: 0 is always in range
        rows = first.shape[0] if first is not None and first.ndim else 2
        cols = first.shape[-1] if first is not None and first.ndim >= 2 else 2
        return torch.zeros(rows, max(cols, 2), dtype=torch.long)
    if r == LABEL:
        return torch.ones_like(first) if first is not None else torch.tensor(1.0)
    return torch.ones_like(first, dtype=torch.bool) if first is not None else torch.tensor(True)


def bindings(expr: Expression, probe: Probe, template: Expression | None) -> list[Binding]:
    """Sample values for the free names of `expr`, from the rule's trigger inputs and the
    threshold table's inputs for the operations in `expr` (numlint.probe.thresholds).

    First each case of the rule's inputs mapped onto the user's names by role and order
    (`F.cross_entropy(torch.softmax(logits, 1), labels)` gets the template's `z` and `t`),
    then every tensor name bound to each floating input in turn; each in three shapes.
    """
    role = roles(expr)
    template_roles = roles(template) if template is not None else {}
    mine = {r: [n for n in expr.free if role[n] == r] for r in (TENSOR, TARGET, LABEL, MASK)}
    samples = _template_samples(probe)
    extra = thresholds.for_operations(operations(expr), probe.dtypes)
    for text, ds in extra:
        value = runner.build_input(text)
        samples += [({"_threshold": undo(value)}, ds) for undo in _undo_constants(expr)]
    out: list[Binding] = []
    seen: set[str] = set()

    def theirs(sample: dict[str, Any], r: str) -> list[Any]:
        names = [n for n in (template.free if template else ()) if n in sample]
        names += [n for n in sample if n not in names]
        return [sample[n] for n in names if template_roles.get(n, _sample_role(sample[n])) == r]

    def add(values: dict[str, Any], sample: dict[str, Any], dtypes: tuple[str, ...]) -> None:
        first = next((v for v in values.values() if _kind(v) == "float"), None)
        for r in (TARGET, LABEL, MASK):
            for name, value in zip(mine[r], theirs(sample, r), strict=False):
                values.setdefault(name, value)
        for name in expr.free:
            if name not in values:
                values[name] = _default(role[name], first)
        big = any(isinstance(v, torch.Tensor) and v.numel() > 4096 for v in values.values())
        for _variant, transform in _VARIANTS[:1] if big else _VARIANTS:
            shaped = {
                k: transform(v) if role[k] == TENSOR and _kind(v) == "float" else v
                for k, v in values.items()
            }
            if any(v is None for v in shaped.values()):
                continue
            label = ", ".join(f"{k} = {_show(shaped[k])}" for k in expr.free if role[k] != DIM)
            key = repr([(k, _fingerprint(v)) for k, v in sorted(shaped.items())])
            if key not in seen:
                seen.add(key)
                out.append(Binding(shaped, label or "no tensor inputs", dtypes))

    for sample, dtypes in samples:
        given = theirs(sample, TENSOR)
        if mine[TENSOR] and len(given) == len(mine[TENSOR]):
            add(dict(zip(mine[TENSOR], given, strict=True)), sample, dtypes)
    for sample, dtypes in samples:
        for v in theirs(sample, TENSOR):
            add(dict.fromkeys(mine[TENSOR], v), sample, dtypes)
    # last, exact zeros of the same shape: the most common real trigger (a zero row, a == b)
    first = next((v for s, _ in samples for v in theirs(s, TENSOR)), None)
    if first is not None and mine[TENSOR]:
        add(dict.fromkeys(mine[TENSOR], torch.zeros_like(first)), samples[0][0], ())
    if not mine[TENSOR] and samples:
        add({}, samples[0][0], ())
    return out


def _undo_constants(expr: Expression) -> list[Any]:
    """Maps that carry a threshold value back through the constant arithmetic between an
    input and the operation (`softmax(x / 12)` reaches its threshold at 12 times the value):
    the identity first, then one per `name op constant` in the expression (at most 3)."""
    maps: list[Any] = [lambda v: v]
    inverse = {
        ast.Div: lambda v, c: v * c,
        ast.Mult: lambda v, c: v / c,
        ast.Add: lambda v, c: v - c,
        ast.Sub: lambda v, c: v + c,
    }
    for node in ast.walk(expr.tree):
        if len(maps) > 3:
            break
        if not isinstance(node, ast.BinOp) or type(node.op) not in inverse:
            continue
        if not isinstance(node.left, ast.Name) or node.left.id not in expr.free:
            continue
        c = node.right
        if isinstance(c, ast.Constant) and type(c.value) in (int, float) and c.value:
            undo = inverse[type(node.op)]
            maps.append(lambda v, undo=undo, c=float(c.value): undo(v, c))
    return maps


def _flat(t: torch.Tensor) -> torch.Tensor | None:
    return t.flatten() if t.ndim >= 2 and t.shape[0] == 1 else None


def _transposed(t: torch.Tensor) -> torch.Tensor | None:
    return t.transpose(-1, -2) if t.ndim >= 2 and t.shape[-1] != t.shape[-2] else None


def _row(t: torch.Tensor) -> torch.Tensor | None:
    return t.unsqueeze(0) if t.ndim == 1 else None


def _diagonal(t: torch.Tensor) -> torch.Tensor | None:
    return torch.diag(t) if t.ndim == 1 and 1 < t.numel() <= 256 else None


#: Shapes tried for each sample: as declared, as a vector (for `softmax(x, 0)` on 1-D
#: code), with the last two dimensions swapped (a reduction over dim 0), a vector as a
#: batch of one row (code indexing dim 1), and as a diagonal matrix (`det`, `inverse`).
_VARIANTS: tuple[tuple[str, Any], ...] = (
    ("", lambda t: t),
    ("flat", _flat),
    ("transposed", _transposed),
    ("row", _row),
    ("diagonal", _diagonal),
)


def _fingerprint(v: Any) -> Any:
    """Enough of a sample to tell two samples apart."""
    if isinstance(v, torch.Tensor):
        flat = v.detach().flatten()
        return (tuple(v.shape), str(v.dtype), flat[:8].tolist(), float(flat.double().sum()))
    return repr(v)


def _show(v: Any) -> str:
    if isinstance(v, torch.Tensor):
        if v.numel() <= 8:
            return str(v.tolist())
        return f"tensor of shape {tuple(v.shape)}"
    return repr(v)


# ---- verdicts -------------------------------------------------------------------------

_CACHE: dict[tuple[Any, ...], runner.Evidence] = {}


def probe_expression(
    hazard: Expression,
    fix: Expression | None,
    probe: Probe,
    dtypes: tuple[str, ...],
    device: str = "cpu",
) -> runner.Evidence:
    """Evidence for one user expression: the first (dtype, sample) where it fails."""
    key = (hazard.key, fix.key if fix else "", repr(probe), dtypes, device)
    if key in _CACHE:
        return _CACHE[key]
    template = None
    if probe.hazard:
        try:
            template = runner.compile_probe_expression(probe.hazard)
        except NotProbeable:
            template = None
    samples = bindings(hazard, probe, template)
    if not samples:
        result = runner.not_probeable("no sample inputs fit this expression", hazard.text)
        _CACHE[key] = result
        return result
    compare = probe.compare if fix is not None else ""
    no_grad = frozenset(n for n, r in roles(hazard).items() if r in NO_GRAD)
    rows: list[runner.Row] = []
    refused: list[str] = []
    for dtype in dtypes:
        # the samples made for this dtype's thresholds first
        for b in sorted(samples, key=lambda b: dtype not in b.dtypes):
            try:
                row = runner.measure(
                    hazard, fix, b.values, dtype, b.label, device, probe.backward, compare, no_grad
                )
            except NotProbeable as exc:  # this sample does not fit (an int where a tensor is)
                refused.append(str(exc))
                continue
            rows.append(row)
            if row.hazard_fails and row.fix_ok is not False:
                break
        if rows and rows[-1].hazard_fails and rows[-1].fix_ok is not False:
            break
    usable = [r for r in rows if r.forward != "raises" or r.hazard_fails]
    if not usable:
        error = next((r.details.get("forward", "") for r in rows), "") or next(iter(refused), "")
        result = runner.not_probeable(
            "no sample input of the probe's fitted this expression (the probe's own failure, "
            f"not a verdict on your code: {error})",
            hazard.text,
        )
    else:
        result = runner.evidence(usable, hazard.text, fix.text if fix else "", dtypes)
        if probe.compare and fix is None and not result.confirmed:
            wrong = {"both": "value and gradient"}.get(probe.compare, probe.compare)
            result = dataclasses.replace(
                result,
                summary=f"{result.summary}; the rule's hazard is a silently wrong {wrong}, "
                "which needs the fix to compare with, and this finding carries none",
            )
    _CACHE[key] = result
    return result


def dtype_order(probe: Probe, info: FileInfo) -> tuple[str, ...]:
    preferred = [d for d in info.dtypes if d in probe.dtypes]
    return tuple(preferred + [d for d in probe.dtypes if d not in preferred])


def probe_finding(
    d: Diagnostic, probe: Probe, info: FileInfo, scopes: _Scopes | None, device: str
) -> runner.Evidence:
    """Probe the expression a finding flags (its fix too, when it carries one).

    When the flagged node is only part of the hazard (the eps literal of `log(p + 1e-8)`),
    the smallest enclosing expression that holds the rule's operations is probed. The
    expression is tried as written (its names as inputs) when it shows the rule's
    operations, then with earlier assignments inlined; the first confirmation wins.
    """
    if info.tree is None or scopes is None:
        raise NotProbeable("the file does not parse")
    wanted = operations(runner.compile_probe_expression(probe.hazard)) if probe.hazard else set()
    candidates = _build(d, info, scopes, wanted)
    if wanted - operations(candidates[-1][0]):
        for wider in scopes.enclosing(info.source, d):
            try:
                built = _build(wider, info, scopes, wanted)
            except NotProbeable:
                continue
            if not wanted - operations(built[-1][0]):
                candidates = built
                break
    hazard, _, opaque = candidates[-1]
    missing = wanted - operations(hazard)
    if opaque and missing and probe.hazard:
        template = runner.compile_probe_expression(probe.hazard)
        template_fix = runner.compile_probe_expression(probe.fix) if probe.fix else None
        known = known_values(hazard, template, opaque, info.imports, template_fix)
        if known is not None:
            # what the rule established about the value (a softmax output) is all that is
            # probed of the code that made it; the fix is the rule's own, on the same inputs
            candidates = [(known[0], known[1], [])]
            missing = wanted - operations(known[0])
    if opaque and missing:
        # a value computed by unprobed code is only a stand-in input when the hazardous
        # operations themselves are in view (`log(softmax(logits))`, not `log(probs)`)
        raise NotProbeable(
            f"`{opaque[0]}` is computed by code that is not probed, and the rule's "
            f"{', '.join(sorted(missing))} is not in the expression"
        )
    dtypes = dtype_order(probe, info)
    results = []
    for hazard, fix, _ in candidates:
        ev = probe_expression(hazard, fix, probe, dtypes, device)
        if ev.confirmed:
            return ev
        results.append(ev)
    if probe.hazard:
        for hazard, _, _ in candidates:
            ev = _vanishing_eps(hazard, runner.compile_probe_expression(probe.hazard), dtypes)
            if ev is not None:
                return ev
    return next((ev for ev in reversed(results) if ev.verdict != runner.NOT_PROBEABLE), results[-1])


#: A literal this small in a probed expression is an eps (a guard against 0).
_EPS_BELOW = 1e-4


def _eps_literals(expr: Expression) -> list[float]:
    return [
        float(n.value)
        for n in ast.walk(expr.tree)
        if isinstance(n, ast.Constant)
        and type(n.value) in (int, float)
        and 0 < abs(n.value) < _EPS_BELOW
    ]


def _vanishing_eps(
    hazard: Expression, template: Expression, dtypes: tuple[str, ...]
) -> runner.Evidence | None:
    """For a rule whose hazard is an eps that rounds to 0 (its own probe adds one): the
    flagged expression evaluated on zeros in the first dtype that rounds the eps to 0,
    when that gives exactly 0 (the guard guards nothing). None when it does not."""
    if not _eps_literals(template):
        return None
    for eps in _eps_literals(hazard):
        for dtype in dtypes:
            tdtype = runner.DTYPES[dtype]
            if float(torch.tensor(eps, dtype=tdtype)) != 0.0:
                continue
            values = {
                n: torch.zeros(2, dtype=tdtype) if r == TENSOR else _default(r, None)
                for n, r in roles(hazard).items()
            }
            out = runner.run(hazard, values, backward=False)
            if out.ok and out.value is not None and bool((out.value == 0).all()):
                shown = ", ".join(f"{n} = {_show(v)}" for n, v in values.items())
                summary = (
                    f"{dtype}: eps {eps:g} rounds to 0, so `{hazard.text}` is exactly 0 at "
                    f"{shown or 'no tensor inputs'}"
                )
                row = runner.Row(
                    dtype, shown, "0", "—", "—", True, None, {"forward": f"eps {eps:g} is 0"}
                )
                return runner.Evidence(runner.CONFIRMED, summary, (row,), dtype, hazard.text)
    return None


#: Operations whose output a flagged name may stand for (`log(p)` with `p` a softmax
#: output made in another function): the name becomes that operation of fresh logits.
_KNOWN_OUTPUTS = frozenset({"softmax", "log_softmax", "sigmoid", "softmin"})


def _call_op(expr: Expression, node: ast.Call) -> tuple[str, list[ast.expr]]:
    """The operation a call makes (as `operations` names it) and its operands, a method's
    receiver first."""
    func = node.func
    qual = expr.resolved.get(id(func))
    if qual:
        name = qual.rsplit(".", 1)[-1]
        args = list(node.args)
    elif isinstance(func, ast.Attribute):
        name, args = func.attr, [func.value, *node.args]
    else:
        return "", []
    name = name[:-1] if name.endswith("_") and not name.startswith("_") else name
    return _SAME_OP.get(name, name), args


def known_values(
    user: Expression,
    template: Expression,
    opaque: list[str],
    imports: Mapping[str, str],
    template_fix: Expression | None = None,
) -> tuple[Expression, Expression | None] | None:
    """`user` with each opaque name that sits where the rule's hazard has a softmax (or a
    sigmoid) replaced by that operation of a new input `<name>_logits`: `F.nll_loss(out, t)`
    against `F.nll_loss(torch.softmax(z, 1), t)` gives
    `F.nll_loss(torch.softmax(out_logits, 1), t)`. With the rule's own fix, that fix on the
    same inputs (its names mapped to the user's operands). None when nothing lines up."""
    found: dict[str, ast.Call] = {}
    operands: dict[str, ast.expr] = {}

    def align(t: ast.AST, u: ast.AST) -> None:
        if isinstance(t, ast.Call) and isinstance(u, ast.Call):
            t_op, t_args = _call_op(template, t)
            u_op, u_args = _call_op(user, u)
            if t_op and t_op == u_op:
                for ta, ua in zip(t_args, u_args, strict=False):
                    if (
                        isinstance(ta, ast.Call)
                        and _call_op(template, ta)[0] in _KNOWN_OUTPUTS
                        and isinstance(ua, ast.Name)
                        and ua.id in opaque
                    ):
                        found.setdefault(ua.id, ta)
                        inner = _call_op(template, ta)[1]
                        if inner and isinstance(inner[0], ast.Name):
                            operands.setdefault(inner[0].id, ast.Name(f"{ua.id}_logits"))
                    elif isinstance(ta, ast.Name) and ta.id in template.free:
                        operands.setdefault(ta.id, ua)
                    else:
                        align(ta, ua)
        elif isinstance(t, ast.BinOp) and isinstance(u, ast.BinOp) and type(t.op) is type(u.op):
            align(t.left, u.left)
            align(t.right, u.right)
        elif isinstance(t, ast.UnaryOp) and isinstance(u, ast.UnaryOp):
            align(t.operand, u.operand)

    for node in ast.walk(user.tree):
        align(template.tree, node)
        if found:
            break
    if not found:
        return None

    class Wrap(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            call = found.get(node.id)
            if call is None:
                return node
            made = copy.deepcopy(call)
            op_qual = template.resolved.get(id(call.func))
            if op_qual:
                made.func = parse_expression(op_qual)
            elif isinstance(made.func, ast.Attribute):  # `z.softmax(1)`: the receiver
                made.func.value = ast.Name(f"{node.id}_logits", ast.Load())
            else:
                return node
            made.args = [
                ast.Name(f"{node.id}_logits", ast.Load()) if i == 0 and op_qual else a
                for i, a in enumerate(made.args)
            ]
            return ast.copy_location(made, node)

    tree = Wrap().visit(copy.deepcopy(user.tree))
    scope = {"torch": "torch", **imports}
    try:
        hazard = compile_expression(tree, scope)
    except NotProbeable:
        return None
    fix = None
    if template_fix is not None and set(template_fix.free) <= set(operands):
        try:
            fix = compile_expression(_transplant(template_fix, operands), scope)
        except NotProbeable:
            fix = None
    return hazard, fix


def _transplant(expr: Expression, names: Mapping[str, ast.expr]) -> ast.expr:
    """`expr`'s tree with its names replaced by `names` and torch spelled out in full."""

    class Move(ast.NodeTransformer):
        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            qual = expr.resolved.get(id(node))
            if qual:
                return ast.copy_location(parse_expression(qual), node)
            self.generic_visit(node)
            return node

        def visit_Name(self, node: ast.Name) -> ast.AST:
            qual = expr.resolved.get(id(node))
            if qual:
                return ast.copy_location(parse_expression(qual), node)
            if node.id in names:
                return copy.deepcopy(names[node.id])
            return node

    return Move().visit(copy.deepcopy(expr.tree))


Built = tuple[Expression, "Expression | None", list[str]]


def _build(d: Diagnostic, info: FileInfo, scopes: _Scopes, wanted: set[str]) -> list[Built]:
    """(hazard, fix, opaque names) for a source range: as written, when that already shows
    its operations and the fix uses no other names, then with assignments inlined."""
    text, fixed_text = flagged(info.source, d)
    where = (d.row, _column_offset(info.source, d))
    imports = dict(info.imports)
    for edit in d.fix.edits if d.fix else ():
        try:
            imports.update(module_imports(ast.parse(edit.content)))
        except SyntaxError:
            pass

    def fix_of(inlined: bool, hazard: Expression | None = None) -> Expression | None:
        """The fix, its names followed as far as the hazard's (the hazard's inputs stay
        inputs, so both run on the same samples)."""
        if fixed_text is None:
            return None
        keep = frozenset(hazard.free) if hazard is not None else frozenset()
        try:
            parsed = parse_expression(fixed_text)
            tree = inline(parsed, scopes, imports, where, not inlined, keep=keep)
            return _compile(tree, imports, stand_ins)
        except NotProbeable:
            return None

    stand_ins: dict[str, str] = {}
    parsed = parse_expression(text)
    # a power the caller sets stays an input (its default, often 2, hides the hazard below 1)
    keep = exponent_names(parsed)
    tree = inline(parsed, scopes, info.imports, where, constants_only=True, keep=keep)
    # follow assignments only as deep as the rule's operations need: what is computed
    # further upstream (a normalisation, another hazard, a model call) enters as a sample
    for depth in range(1, MAX_DEPTH + 1):
        inlined_tree, opaque = inline_tracking(tree, scopes, info.imports, where, depth, keep)
        inlined = _compile(inlined_tree, info.imports, stand_ins)
        if not wanted - operations(inlined):
            break
    opaque = opaque + list(stand_ins.values())
    built: list[Built] = []
    if ast.dump(inlined_tree) != ast.dump(tree):
        try:
            plain = _compile(tree, info.imports, stand_ins)
        except NotProbeable:
            plain = None
        plain_fix = fix_of(False)
        if (
            plain is not None
            and not wanted - operations(plain)
            and (plain_fix is None or set(plain_fix.free) <= set(plain.free))
        ):
            built.append((plain, plain_fix, []))
    built.append((inlined, fix_of(True, inlined), opaque))
    return built


#: Callees never stood in for: the probe refuses code that reaches the system.
_NEVER_STAND_IN = frozenset(
    "open eval exec compile __import__ getattr setattr globals locals vars os sys subprocess "
    "shutil pathlib builtins importlib input print".split()
)


def _stand_in_name(call: ast.Call) -> str | None:
    """`self.encoder(x)` -> "encoder_out", `model(x)` -> "model_out"; None for anything
    but a call of a plain dotted name (no dunders, nothing that reaches the system)."""
    parts = dotted_parts(call.func)
    if parts is None or any(p.startswith("__") or p in _NEVER_STAND_IN for p in parts):
        return None
    return f"{parts[-1]}_out"


def _compile(tree: ast.expr, imports: Mapping[str, str], stand_ins: dict[str, str]) -> Expression:
    """Compile `tree`; a call the whitelist refuses (a model, a layer on `self`) becomes a
    sample input named after it, recorded in `stand_ins` (source text -> name) so the fix
    gets the same one. Raises the first refusal when that is not enough."""
    try:
        return compile_expression(tree, imports)
    except NotProbeable as first:
        refused = first
    replaced = _StandIn(imports, stand_ins).visit(copy.deepcopy(tree))
    try:
        return compile_expression(replaced, imports)
    except NotProbeable:
        raise refused from None


class _StandIn(ast.NodeTransformer):
    def __init__(self, imports: Mapping[str, str], names: dict[str, str]) -> None:
        self.imports = imports
        self.names = names

    def visit_Call(self, node: ast.Call) -> ast.AST:
        try:
            compile_expression(node, self.imports)
            return node
        except NotProbeable:
            pass
        self.generic_visit(node)
        try:
            compile_expression(node, self.imports)
            return node
        except NotProbeable:
            pass
        name = _stand_in_name(node)
        if name is None or _function_ref(node.func, self.imports):
            return node  # a torch function refused for its arguments stays refused
        text = ast.unparse(node)
        if text not in self.names:
            taken = set(self.names.values())
            unique, k = name, 2
            while unique in taken:
                unique, k = f"{name}{k}", k + 1
            self.names[text] = unique
        return ast.copy_location(ast.Name(self.names[text], ast.Load()), node)


def _column_offset(source: str, d: Diagnostic) -> int:
    """The diagnostic's start column as ast counts it (UTF-8 bytes, 0-based)."""
    line = source.splitlines()[d.row - 1] if d.row - 1 < len(source.splitlines()) else ""
    return len(line[: d.column - 1].encode("utf-8"))


def scopes_for(info: FileInfo) -> _Scopes | None:
    return _Scopes(info.tree) if info.tree is not None else None
