"""Which parts of a file the active rules can need: the rest is left out before parsing.

Parsing with libcst is most of numlint's cost, and most functions in a file contain nothing a
rule looks for. A top-level function or class whose text holds none of the active rules'
triggers is removed (numlint.positions places what is kept by CPython's line numbers); such a
method becomes `pass` and empty lines, keeping its class's lines. Kept always: every
top-level statement that is not a definition (imports, assignments, script code) except long
data tables (see DATA_TABLE_LINES), a class's own body statements and `__init__`, and,
transitively, any definition whose name is called in kept text (a helper, a model class, a
method called through `self`). Each rule says how much code around a trigger it needs
(`Rule.CHUNK`): "function" (the default), "class" (a method holding a trigger, the words the
rule also requires anywhere in its top-level class), "callers" (as "function", and the
functions and methods calling one that holds a trigger: where a wrapper is given its input)
or "module" (the whole file).
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

from numlint.positions import LINE_BREAK, unit_start
from numlint.rule import Rule

#: A name called in kept text (`helper(`, `Model(`): its top-level definition is kept. The
#: first alternative skips the names that `def` and `class` statements introduce. (The two
#: look-arounds in front hold for every match of either; they only let the search skip the
#: other places faster.)
_CALLED = re.compile(r"(?<!\w)(?=[A-Za-z_])(?:\b(?:def|class)\s+\w+|(?<![\w.])([A-Za-z_]\w*)\s*\()")
#: A method called through `self.` or `cls.` in a kept part of its class: it is kept
#: (`self(x)` calls forward). The look-ahead, as above, only speeds the search.
_SELF_CALLED = re.compile(r"(?=[sc])\b(?:self|cls)(?:\.([A-Za-z_]\w*))?\s*\(")
_STRING_START = frozenset("'\"rRbBuUfF")
DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
#: Methods kept in every kept class: they set the attributes other methods read.
_ALWAYS = frozenset({"__init__", "__post_init__", "__new__", "setup", "reset_parameters"})
_CALLABLE = frozenset({"forward", "__call__"})


Extra = dict[type[Rule], frozenset[str]]


@dataclass(eq=False)
class _Unit:
    """A definition that may be left out: a top-level def/class or a method of one."""

    node: ast.stmt
    name: str
    start: int  # first line, decorators included
    end: int
    text: str
    methods: list[_Unit] = field(default_factory=list)
    method: bool = False
    kept: bool = False
    skeleton: str = ""  # the text without the methods
    selfs: frozenset[str] | None = None  # methods its text calls through self (see _SELF_CALLED)
    carriers: Extra | None = None  # of a class, for the reduce's rules (see _class_carriers)

    def self_calls(self, text: str) -> frozenset[str]:
        if self.selfs is None:
            self.selfs = frozenset(_SELF_CALLED.findall(text))
        return self.selfs


def _hits(rule: type[Rule], text: str, extra: Extra, scope: str | None = None) -> bool:
    """Whether `text` holds one of the rule's triggers and `scope` (default: `text`) one of
    the words it also requires."""
    triggers = rule.TRIGGERS + tuple(extra.get(rule, ()))
    return any(t in text for t in triggers) and (
        not rule.ALSO_REQUIRES
        or any(t in (text if scope is None else scope) for t in rule.ALSO_REQUIRES)
    )


def _carriers(
    groups: Sequence[tuple[Sequence[ast.stmt], str]], rules: Sequence[type[Rule]]
) -> Extra:
    """Names and attributes assigned in statements holding a rule's trigger (`criterion =
    nn.CrossEntropyLoss()`, `self.act = nn.Softmax(-1)`): code using them needs the rule too.
    Each group is some statements and their text."""
    out: dict[type[Rule], set[str]] = {}
    for stmts, text in groups:
        found = [r for r in rules if any(t in text for t in r.TRIGGERS)]
        if not found:
            continue
        stored = _stored([s for s in stmts if not isinstance(s, (ast.Import, ast.ImportFrom))])
        for r in found:
            out.setdefault(r, set()).update(stored)
    return {r: frozenset(names) for r, names in out.items()}


def _stored(stmts: list[ast.stmt]) -> set[str]:
    """The names and attributes that `stmts` assign (what `ast.walk` would find, read from
    the nodes' fields in one loop)."""
    out: set[str] = set()
    todo: list[ast.AST] = list(stmts)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Store):
            out.add(node.id if isinstance(node, ast.Name) else node.attr)
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                todo.append(value)
            elif isinstance(value, list):
                todo.extend(v for v in value if isinstance(v, ast.AST))
    return out


def _select(units: list[_Unit], kept_text: str, rules: Sequence[type[Rule]], extra: Extra) -> None:
    """Mark the units to keep: those holding a trigger, and what kept code calls."""
    whole_class = [r for r in rules if r.CHUNK == "class"]
    names = set(_CALLED.findall(kept_text))
    for u in units:
        if any(_hits(r, u.text, extra) for r in rules):
            scoped = [r for r in whole_class if _hits(r, u.text, extra)]
            _keep(u, names, scoped, rules, extra)
    callers = [r for r in rules if r.CHUNK == "callers"]
    if callers:
        _keep_callers(units, names, rules, callers, extra)
    changed = True
    while changed:
        changed = False
        for u in units:
            if not u.kept and u.name in names:
                # A class kept for its name is a model a loss may read: keep its forward().
                _keep(u, names, (), rules, extra, _CALLABLE)
                changed = True
            if u.kept and u.methods:
                own = set(u.self_calls(u.skeleton))
                for m in u.methods:
                    if m.kept:
                        own.update(m.self_calls(m.text))
                if "" in own:
                    own |= _CALLABLE
                for m in u.methods:
                    if not m.kept and m.name in own:
                        _keep(m, names, (), rules, extra)
                        changed = True


def _keep_callers(
    units: list[_Unit],
    names: set[str],
    rules: Sequence[type[Rule]],
    callers: Sequence[type[Rule]],
    extra: Extra,
) -> None:
    """For the rules in `callers` (CHUNK "callers"): also keep the functions and methods
    that call, by name or through `self.`, one that holds their trigger or an attribute a
    statement holding it sets (`def loss(self, z, y): return self.loss_func(z, y)`): a call
    of such a wrapper is where the rule sees what it is given."""
    wrappers: set[str] = set()
    for u in units:
        own = _class_carriers(u, rules, extra) if u.methods else extra
        for m in (u, *u.methods):
            if not m.name.startswith("__") and any(_hits(r, m.text, own) for r in callers):
                wrappers.add(m.name)
    if not wrappers:
        return
    pattern = re.compile(
        r"(?<![\w.])(?:self\.)?(?:" + "|".join(re.escape(w) for w in sorted(wrappers)) + r")\s*\("
    )
    for u in units:
        for m in u.methods or [u]:  # a class's methods, or the function itself
            if m.kept or not pattern.search(m.text):
                continue
            if m is not u and not u.kept:
                _keep(u, names, (), rules, extra)
            _keep(m, names, (), rules, extra)


def _keep(
    u: _Unit,
    names: set[str],
    scoped: Sequence[type[Rule]],
    rules: Sequence[type[Rule]],
    extra: Extra,
    wanted: frozenset[str] = frozenset(),
) -> None:
    """Keep `u`; of a class, its body statements, `__init__`-like methods, the methods in
    `wanted` and those holding a trigger, counting the attributes the rest sets. For the
    rules in `scoped` (CHUNK "class", which the class's text passes), a method needs only a
    trigger, the words they also require may lie anywhere in the class (`dtype=torch.float16`
    in `__init__`, the eps in `forward`), and a method spelling their EVIDENCE is kept."""
    u.kept = True
    u.skeleton = _skeleton(u)
    names.update(_CALLED.findall(u.skeleton))
    if not u.methods:
        return
    merged = _class_carriers(u, rules, extra)
    for m in u.methods:
        if (
            m.name in _ALWAYS
            or m.name in wanted
            or any(_hits(r, m.text, merged) for r in rules)
            or any(_hits(r, m.text, merged, u.text) for r in scoped)
            or any(w in m.text for r in scoped for w in r.EVIDENCE)
        ):
            _keep(m, names, (), rules, extra)


def _skeleton(u: _Unit) -> str:
    """The text of `u` without its methods."""
    text = u.text
    for m in u.methods:
        text = text.replace(m.text, "", 1)
    return text


def _class_carriers(u: _Unit, rules: Sequence[type[Rule]], extra: Extra) -> Extra:
    """`extra` and what the class `u` sets in its `__init__`-like methods and body statements
    that hold a trigger: the carriers its methods are read against (read once per class:
    `rules` and `extra` are the same throughout a reduce)."""
    if u.carriers is None:
        setup = [m for m in u.methods if m.name in _ALWAYS]
        body = [s for s in u.node.body if not isinstance(s, DEFS)]  # type: ignore[attr-defined]
        skeleton = u.skeleton or _skeleton(u)
        own = _carriers([([m.node], m.text) for m in setup] + [(body, skeleton)], rules)
        u.carriers = {r: extra.get(r, frozenset()) | own.get(r, frozenset()) for r in rules}
    return u.carriers


def _code(source: str, tree: ast.Module, offsets: Sequence[int]) -> str:
    """`source` with full-line comments and docstrings (any string statement) turned to
    spaces, offsets unchanged: triggers in prose do not keep code."""

    def line(number: int) -> str:
        end = offsets[number] if number < len(offsets) else len(source)
        return source[offsets[number - 1] : end].rstrip("\r\n")

    prose: set[int] = set()
    stack: list[list[ast.stmt]] = [tree.body]
    while stack:
        for stmt in stack.pop():
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
                alone = line(first).lstrip()[:1] in _STRING_START and line(last).rstrip()[-1:] in (
                    "'",
                    '"',
                )
                prose.update(range(first if alone else first + 1, last + (1 if alone else 0)))
            for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                block = getattr(stmt, name, None)
                if isinstance(block, list):
                    stack.append(block)
    # Full-line comments: only the lines holding a `#` are looked at.
    at = source.find("#")
    while at != -1:
        number = bisect_right(offsets, at)
        if line(number).lstrip().startswith("#"):
            prose.add(number)
        at = source.find("#", offsets[number] if number < len(offsets) else len(source))
    out, pos = [], 0
    for number in sorted(prose):
        if number > len(offsets):
            break
        start = offsets[number - 1]
        body = line(number)
        out += [source[pos:start], " " * len(body)]
        pos = start + len(body)
    out.append(source[pos:])
    return "".join(out)


@dataclass
class Reduced:
    """What remains of a file to parse."""

    text: str
    #: The top-level statements (of the file's ast) left in `text`.
    top: list[ast.stmt]
    #: The file's line number of each line of `text`; None when they are the same.
    lines: list[int] | None = None


def reduce(
    source: str,
    tree: ast.Module,
    rules: Sequence[type[Rule]],
    offsets: Sequence[int],
    only: frozenset[int] | None = None,
) -> Reduced:
    """`source` without the top-level definitions no rule in `rules` needs (and those whose
    first line is not in `only`, when given), methods no rule needs turned into `pass`."""
    code = _code(source, tree, offsets) if only is None else source

    def text(start: int, end: int) -> str:
        return code[offsets[start - 1] : offsets[end] if end < len(offsets) else len(source)]

    def unit(node: ast.stmt, method: bool) -> _Unit:
        start, end = unit_start(node), node.end_lineno or node.lineno
        return _Unit(node, node.name, start, end, text(start, end), method=method)  # type: ignore[attr-defined]

    units: list[_Unit] = []
    dropped: list[_Unit] = []
    kept: list[ast.stmt] = []
    kept_text: list[str] = []
    for i, stmt in enumerate(tree.body):
        if _data_table(stmt, tree.body[i - 1] if i else None, tree.body[i + 1 : i + 2]):
            end = stmt.end_lineno or stmt.lineno
            dropped.append(_Unit(stmt, "", stmt.lineno, end, ""))
            continue
        if not isinstance(stmt, DEFS):
            kept.append(stmt)
            kept_text.append(text(stmt.lineno, stmt.end_lineno or stmt.lineno))
            continue
        top = unit(stmt, method=False)
        if only is not None and top.start not in only:
            dropped.append(top)
            continue
        units.append(top)
        if isinstance(stmt, ast.ClassDef):
            top.methods = [unit(s, method=True) for s in stmt.body if isinstance(s, DEFS)]
    if not rules or any(r.CHUNK == "module" or not r.TRIGGERS for r in rules):
        for u in units:
            u.kept = True
            for m in u.methods:
                m.kept = True
    elif units:
        extra = _carriers([([s], t) for s, t in zip(kept, kept_text, strict=True)], rules)
        _select(units, "".join(kept_text), rules, extra)
    gone = dropped + [u for u in units if not u.kept]
    passed = [m for u in units if u.kept for m in u.methods if not m.kept]
    if not gone and not passed:
        return Reduced(source, tree.body)
    left = {id(u.node) for u in gone}
    top = [s for s in tree.body if id(s) not in left]
    return _cut(source, offsets, gone, passed, top)


#: A module-level assignment of a plain literal (numbers, strings, names such as
#: `torch.float16`, and dicts, lists, tuples and sets of them: no call, no operation a rule
#: reports) at least this many lines long is left out: no rule reads into a table of numbers,
#: and a generated file can be one table of megabytes (libcst's tree of it, gigabytes).
DATA_TABLE_LINES = 100
_LITERAL = (
    *(ast.Constant, ast.Dict, ast.List, ast.Tuple, ast.Set, ast.Name, ast.Attribute),
    *(ast.UnaryOp, ast.USub, ast.UAdd, ast.Load),
)


def _data_table(stmt: ast.stmt, before: ast.stmt | None, after: list[ast.stmt]) -> bool:
    """Whether `stmt` is such a table, on lines of its own."""
    if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or stmt.value is None:
        return False
    end = stmt.end_lineno or stmt.lineno
    if end - stmt.lineno + 1 < DATA_TABLE_LINES:
        return False
    if (before is not None and (before.end_lineno or before.lineno) >= stmt.lineno) or (
        after and after[0].lineno <= end
    ):
        return False  # `a = 1; table = {...}`: lines are cut whole
    return all(isinstance(n, _LITERAL) for n in ast.walk(stmt.value))


def _cut(
    source: str,
    offsets: Sequence[int],
    gone: Sequence[_Unit],
    passed: Sequence[_Unit],
    top: list[ast.stmt],
) -> Reduced:
    """Remove the lines of `gone`; turn each of `passed` into `pass` and empty lines."""
    out: list[str] = []
    lines: list[int] = []
    pos, line = 0, 1
    for u in sorted([*gone, *passed], key=lambda u: u.start):
        a = offsets[u.start - 1]
        b = offsets[u.end] if u.end < len(offsets) else len(source)
        out.append(source[pos:a])
        lines.extend(range(line, u.start))
        if u.method:
            ends = LINE_BREAK.findall(source, a, b)
            first = source[a : offsets[u.start] if u.start < len(offsets) else len(source)]
            indent = first[: len(first) - len(first.lstrip(" \t"))]
            out.append(indent + "pass" + (ends[0] if ends else "\n") + "".join(ends[1:]))
            lines.extend(range(u.start, u.end + 1))
        pos, line = b, u.end + 1
    out.append(source[pos:])
    lines.extend(range(line, len(offsets) + 1))
    return Reduced("".join(out), top, lines)
