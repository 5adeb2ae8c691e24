"""Fast read-only traversal of libcst trees.

libcst's own `node.visit(visitor)` rebuilds every node it passes; linting only reads, so
numlint walks the dataclass fields that can hold code instead (not whitespace, punctuation
or names that are not references). `walk(node, visitor)` takes an ordinary
`libcst.CSTVisitor` (its `visit_X` / `leave_X` methods, `False` to skip children).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TypeVar

import libcst as cst

#: Fields never walked: whitespace, punctuation and operator tokens, and names that are not
#: references (`x.attr`, keyword names, definitions, imports) or only annotate types.
SKIP_FIELDS = frozenset(
    {
        "lpar", "rpar", "comma", "equal", "dot", "semicolon", "colon", "operator",
        "leading_lines", "lines_after_decorators", "trailing_whitespace", "header", "footer",
        "lbracket", "rbracket", "lbrace", "rbrace", "first_colon", "second_colon",
        "asynchronous", "relative", "posonly_ind", "whitespace_between", "newline",
        "attr", "keyword", "name", "asname", "names", "module", "annotation", "returns",
    }
)  # fmt: skip
N = TypeVar("N", bound=cst.CSTNode)
_FIELDS: dict[type, tuple[str, ...]] = {}
_ALL_FIELDS: dict[type, tuple[str, ...]] = {}
_NODE_TYPES: dict[type, bool] = {}


def fields(kind: type) -> tuple[str, ...]:
    """The walked fields of a node type, in declaration order."""
    names = _FIELDS.get(kind)
    if names is None:
        names = tuple(
            f.name
            for f in dataclasses.fields(kind)
            if f.name not in SKIP_FIELDS and not f.name.startswith("whitespace")
        )
        _FIELDS[kind] = names
    return names


def is_node(kind: type) -> bool:
    known = _NODE_TYPES.get(kind)
    if known is None:
        known = _NODE_TYPES[kind] = issubclass(kind, cst.CSTNode)
    return known


def every_field(kind: type) -> tuple[str, ...]:
    """All fields of a node type, whitespace and names that are not references too."""
    names = _ALL_FIELDS.get(kind)
    if names is None:
        names = _ALL_FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind))
    return names


def children(node: cst.CSTNode, every: bool = False) -> Iterator[cst.CSTNode]:
    """The walked children of a node (all of them when `every`), in order."""
    for name in (every_field if every else fields)(type(node)):
        value = getattr(node, name)
        if type(value) in (list, tuple):
            for child in value:
                if is_node(type(child)):
                    yield child
        elif is_node(type(value)):
            yield value


def walk(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """Visit `node` and its descendants with a CSTVisitor, without rebuilding anything
    (`children` inlined)."""
    if visitor.on_visit(node) is not False:
        known = _NODE_TYPES
        kind = type(node)
        names = _FIELDS.get(kind)
        for name in fields(kind) if names is None else names:
            value = getattr(node, name)
            of = type(value)
            if of is list or of is tuple:
                for child in value:
                    of = type(child)
                    if known[of] if of in known else is_node(of):
                        walk(child, visitor)
            elif known[of] if of in known else is_node(of):
                walk(value, visitor)
    visitor.on_leave(node)


def descendants(node: cst.CSTNode, every: bool = False) -> Iterator[cst.CSTNode]:
    """`node` and every walked node below it (every node at all when `every`), in
    pre-order (`children` inlined: a generator per node costs more than the walk)."""
    names_of = every_field if every else fields
    table = _ALL_FIELDS if every else _FIELDS
    known = _NODE_TYPES
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        below: list[cst.CSTNode] = []
        names = table.get(type(current))
        for name in names_of(type(current)) if names is None else names:
            value = getattr(current, name)
            kind = type(value)
            if kind is list or kind is tuple:
                for child in value:
                    of = type(child)
                    if known[of] if of in known else is_node(of):
                        below.append(child)
            elif known[kind] if kind in known else is_node(kind):
                below.append(value)
        if below:
            below.reverse()
            stack.extend(below)


def compound_statements(node: cst.CSTNode) -> Iterator[cst.BaseCompoundStatement]:
    """The compound statements (`if`, `elif`, `while`, `for`, `with`, `try`, nested `def`
    and `class`) in `node` and below it, in pre-order, without entering expressions or
    simple statements: where `descendants` would find them, at a fraction of the nodes."""
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.BaseCompoundStatement):
            yield current
        below: list[cst.CSTNode] = []
        for name in _BLOCK_FIELDS.get(type(current), ()):
            value = getattr(current, name)
            if type(value) in (list, tuple):
                below.extend(value)
            elif value is not None:
                below.append(value)
        if below:
            below.reverse()
            stack.extend(below)


#: The fields of a statement or block that hold statements, in the order `descendants`
#: walks them.
_BLOCK_FIELDS: dict[type, tuple[str, ...]] = {
    cst.Module: ("body",),
    cst.IndentedBlock: ("body",),
    cst.If: ("body", "orelse"),
    cst.Else: ("body",),
    cst.While: ("body", "orelse"),
    cst.For: ("body", "orelse"),
    cst.With: ("body",),
    cst.Try: ("body", "handlers", "orelse", "finalbody"),
    cst.TryStar: ("body", "handlers", "orelse", "finalbody"),
    cst.ExceptHandler: ("body",),
    cst.ExceptStarHandler: ("body",),
    cst.Finally: ("body",),
    cst.FunctionDef: ("body",),
    cst.ClassDef: ("body",),
    cst.Match: ("cases",),
    cst.MatchCase: ("body",),
}


_EXITS = (cst.Return, cst.Raise, cst.Continue, cst.Break)


def exits(block: cst.BaseSuite, kinds: tuple[type[cst.CSTNode], ...] = _EXITS) -> bool:
    """A block whose last statement line returns, raises, continues or breaks (one of `kinds`:
    `(cst.Raise,)` for a block that raises; `if c: return` on one line included, an `if` /
    `elif` / `else` whose every arm does, and a `try` whose body and handlers do)."""
    if isinstance(block, cst.SimpleStatementSuite):
        return any(isinstance(s, kinds) for s in block.body)
    body = getattr(block, "body", ())
    last = body[-1] if body else None
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(s, kinds) for s in last.body)
    if isinstance(last, cst.Try):  # `try: return new(...)` / `except E: return old(...)`
        return exits(last.body, kinds) and all(exits(h.body, kinds) for h in last.handlers)
    return isinstance(last, cst.If) and _every_arm_exits(last, kinds)


def _every_arm_exits(node: cst.If, kinds: tuple[type[cst.CSTNode], ...]) -> bool:
    """`if a: return x` / `elif b: raise` / `else: return y`."""
    if node.orelse is None or not exits(node.body, kinds):
        return False
    if isinstance(node.orelse, cst.If):
        return _every_arm_exits(node.orelse, kinds)
    return exits(node.orelse.body, kinds)


def call_name(call: cst.Call) -> str:
    """The last name of what a call calls: `f` for `f(x)`, `nansum` for `torch.nansum(x)` or
    `x.nansum()` ("" for anything else)."""
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else ""


def unparenthesized(node: N) -> N:
    """`node` without its outer parentheses; an empty tuple keeps them (`()` is a tuple only
    with them)."""
    if not getattr(node, "lpar", None) or (isinstance(node, cst.Tuple) and not node.elements):
        return node
    return node.with_changes(lpar=[], rpar=[])  # type: ignore[attr-defined,no-any-return]
