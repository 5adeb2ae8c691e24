"""Lint one source text: prefilter, parse once, run every enabled rule in one traversal."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import gc
import inspect
import re
import threading
import types
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import libcst as cst

from numlint import chunks, suppress
from numlint.analysis.context import Context, steps
from numlint.diagnostic import PARSE_ERROR, Diagnostic, Edit, Fix, parse_error
from numlint.positions import LINE_BREAK, Positions, line_offsets, unit_start
from numlint.rule import Report, Rule, RuleSpec
from numlint.tree import fields, is_node

if TYPE_CHECKING:
    from numlint.incremental import Incremental
    from numlint.reparse import StatementParser


class _InternalError(Rule):
    """Stands in for a rule that raised: its finding is a NUM000."""

    CODE = PARSE_ERROR
    NAME = "internal-error"
    MESSAGE = "internal error"


#: A node type's walked fields, visit and leave handlers, and context steps (see _Walker).
_Plan = tuple[
    tuple[str, ...],
    Sequence[Callable[[Any], Any]],
    Sequence[Callable[[Any], Any]],
    Callable[..., None] | None,
    Callable[..., None] | None,
    bool,
]


class _Walker:
    """One depth-first pass over the tree calling each rule's visit_/leave_ methods.

    Uses numlint.tree's field walk (libcst's own visitor rebuilds every node it passes).
    """

    def __init__(self, ctx: Context, rules: Sequence[Rule]) -> None:
        self.ctx = ctx
        self.errors: list[Report] = []
        self.visits: dict[type, list[Callable[[Any], Any]]] = {}
        self.leaves: dict[type, list[Callable[[Any], Any]]] = {}
        #: Per node type: its walked fields, visit and leave handlers, and the context's
        #: steps on entering and leaving it (see context.steps; read once per type).
        self.plans: dict[type, _Plan] = {}
        self.known: dict[type, bool] = {}
        for rule in rules:
            for name in rule.handlers():
                kind, _, node_type = name.partition("_")
                cls = getattr(cst, node_type, None)
                if not isinstance(cls, type):
                    raise TypeError(f"{type(rule).__name__}.{name}: no libcst node {node_type}")
                table = self.visits if kind == "visit" else self.leaves
                table.setdefault(cls, []).append(getattr(rule, name))

    def walk(self, node: cst.CSTNode) -> None:
        kind = type(node)
        ctx = self.ctx
        plan = self.plans.get(kind)
        if plan is None:
            plan = self._plan(kind)
        names, visits, leaves, enter, leave, suite = plan
        ctx.stack.append(node)  # ctx.enter(node), inlined
        if enter is not None:
            enter(ctx, node)
            if ctx.answers:
                ctx.answers = {}
        for handler in visits:
            try:
                handler(node)
            except RecursionError:
                raise
            except Exception as exc:
                self._failed(handler, node, exc)
        known = self.known
        for name in names:
            value = getattr(node, name)
            of = type(value)
            if of is list or of is tuple:
                for child in value:
                    of = type(child)
                    if known[of] if of in known else self._known(of):
                        self.walk(child)
            elif known[of] if of in known else self._known(of):
                self.walk(value)
        for handler in leaves:
            try:
                handler(node)
            except RecursionError:
                raise
            except Exception as exc:
                self._failed(handler, node, exc)
        ctx.stack.pop()  # ctx.leave(node), inlined
        if suite:
            ctx.end_suite(node)
        if leave is not None:
            leave(ctx, node)
            if ctx.answers:
                ctx.answers = {}

    def _plan(self, kind: type) -> _Plan:
        """A node type's walked fields, its rules' handlers (the handler lists themselves,
        which `_failed` edits in place) and the context's steps."""
        plan = self.plans[kind] = (
            fields(kind),
            self.visits.get(kind, ()),
            self.leaves.get(kind, ()),
            *steps(kind),
        )
        return plan

    def _known(self, kind: type) -> bool:
        """Whether values of `kind` are libcst nodes (remembered per type)."""
        found = self.known[kind] = is_node(kind)
        return found

    def _failed(self, handler: Callable[[Any], Any], node: cst.CSTNode, exc: Exception) -> None:
        """A rule crashed: report it once at `node` as NUM000 and stop running that rule."""
        rule: Rule = handler.__self__  # type: ignore[attr-defined]
        for table in (self.visits, self.leaves):
            for handlers in table.values():
                handlers[:] = [h for h in handlers if h.__self__ is not rule]  # type: ignore[attr-defined]
        self.errors.append(
            Report(
                _InternalError,
                node,
                f"internal error in rule {rule.CODE} ({type(exc).__name__}: {exc}); "
                "please report it with this file",
                None,
            )
        )


def parse(source: str) -> cst.Module:
    """Parse with libcst; raises cst.ParserSyntaxError, RecursionError or ValueError.

    Nodes are not validated as the parser builds them (a quarter of the parse): what the
    parser builds from source is valid by construction (libcst's own PERF note in
    `CSTNode.__post_init__`). Nodes built outside a parse (fixes) are validated as usual.
    """
    global _parsing
    if _VALIDATE is None:
        return cst.parse_module(source)
    with _parsing_lock:
        _parsing += 1
        cst.CSTNode.__post_init__ = _no_validation  # type: ignore[method-assign]
    try:
        return cst.parse_module(source)
    finally:
        with _parsing_lock:
            _parsing -= 1
            if not _parsing:  # the last of concurrent parses puts validation back
                cst.CSTNode.__post_init__ = _VALIDATE  # type: ignore[method-assign]


_VALIDATE = cst.CSTNode.__dict__.get("__post_init__")
_parsing = 0
_parsing_lock = threading.Lock()


def _no_validation(self: cst.CSTNode) -> None:
    pass


def _install_fast_constructors() -> list[type]:
    """Give each libcst node class a constructor that stores its fields through their slot
    descriptors, in place of the frozen dataclass's `object.__setattr__` call per field (a
    parse builds millions of nodes; about a twentieth of its time). Same signature, defaults
    and `__post_init__` call; a class of another shape keeps its own."""
    done: list[type] = []
    for cls in vars(cst).values():
        if not (isinstance(cls, type) and issubclass(cls, cst.CSTNode)):
            continue
        init = cls.__dict__.get("__init__")
        if not (dataclasses.is_dataclass(cls) and init is not None and _generated(init, cls)):
            continue
        fast = _slot_init(cls, init)
        if fast is not None:
            cls.__init__ = fast  # type: ignore[misc]
            done.append(cls)
    return done


def _generated(init: Any, cls: type) -> bool:
    """Whether `init` is the constructor dataclasses wrote for `cls`."""
    code = getattr(init, "__code__", None)
    return (
        code is not None
        and code.co_filename == "<string>"
        and (init.__qualname__ == f"{cls.__qualname__}.__init__")
    )


def _slot_init(cls: type, init: Any) -> Callable[..., None] | None:
    """The constructor of `cls` (whose dataclass constructor is `init`) setting its slots,
    or None when its fields are not plain slots or its parameters not plain ones."""
    fields = [f for f in dataclasses.fields(cls) if f.init]
    code = init.__code__
    params = code.co_varnames[: code.co_argcount]
    if (
        [f.name for f in fields] != list(params[1:])
        or code.co_kwonlyargcount
        or (code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS))
    ):
        return None
    names: dict[str, Any] = {"_missing": dataclasses.MISSING}
    heads, lines = ["self"], []
    for i, f in enumerate(fields):
        slot = next((k.__dict__[f.name] for k in cls.__mro__ if f.name in k.__dict__), None)
        if type(slot) is not types.MemberDescriptorType:
            return None
        names[f"_set{i}"] = slot.__set__
        if f.default is not dataclasses.MISSING:
            names[f"_default{i}"] = f.default
            heads.append(f"{f.name}=_default{i}")
        elif f.default_factory is not dataclasses.MISSING:
            names[f"_factory{i}"] = f.default_factory
            heads.append(f"{f.name}=_missing")
            lines.append(f"if {f.name} is _missing: {f.name} = _factory{i}()")
        else:
            heads.append(f.name)
        lines.append(f"_set{i}(self, {f.name})")
    lines.append("self.__post_init__()")
    text = f"def __init__({', '.join(heads)}):\n" + "".join(f"    {t}\n" for t in lines)
    exec(text, names)  # as dataclasses writes its constructors
    fast = names["__init__"]
    fast.__qualname__ = init.__qualname__
    fast.__doc__ = init.__doc__
    return fast


#: The libcst node classes given a slot-setting constructor (before any worker is forked).
FAST_CONSTRUCTORS = _install_fast_constructors()


def lint(
    source: str,
    path: str,
    rules: Sequence[RuleSpec],
    chunked: bool = True,
    only: frozenset[int] | None = None,
    tree: ast.Module | None = None,
    dependencies: set[str] | None = None,
    reuse: Incremental | None = None,
) -> list[Diagnostic]:
    """Every finding of `rules` in `source`, suppressions applied, sorted by position.

    `chunked`: parse only the definitions the active rules can need (numlint.chunks).
    `only`: leave out every top-level definition whose first line is not in it. `tree`:
    CPython's ast of `source`, when the caller has it. `dependencies`: filled with the
    other files (and directories) whose contents the findings depend on. `reuse`: the
    state of the buffer linted before (an editor's): only what changed is linted again,
    and it keeps its own `dependencies`."""
    with collections_paused():
        return _lint(source, path, rules, chunked, only, tree, dependencies, reuse)


@contextlib.contextmanager
def collections_paused() -> Iterator[None]:
    """No garbage collection inside: a libcst tree is hundreds of thousands of objects,
    freed by reference counting, that the collector would traverse again and again (a
    quarter of the time on a corpus). What is left for it runs after."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _lint(
    source: str,
    path: str,
    rules: Sequence[RuleSpec],
    chunked: bool,
    only: frozenset[int] | None,
    tree: ast.Module | None,
    dependencies: set[str] | None,
    reuse: Incremental | None,
) -> list[Diagnostic]:
    """The one place a file's text goes through: its syntax, the active rules, its
    suppressions and what an earlier lint of it still gives are decided here, once; the
    rest is called with them."""
    # CPython's parser first (8% of a libcst parse): it rejects what libcst would take minutes
    # over, or crash on (a 10,000-long `not` chain overflows libcst's native stack).
    if tree is None and reuse is not None:
        tree = reuse.syntax_tree(source, path, syntax_tree)
    elif tree is None:
        from numlint.analysis.summaries import known_tree

        # parsed already, in a search of another file's callers
        tree = known_tree(path, source) or syntax_tree(source, path)
    if isinstance(tree, list):
        if reuse is not None:
            reuse.reset()
        return tree
    active = active_rules(source, rules)
    if not active and reuse is None:
        return []
    supp = None  # read when a finding is to be filtered, or for an earlier lint's state
    plan = None
    if reuse is not None:
        supp = suppress.parse(source)
        codes = [r.CODE for r, _ in active]
        plan = reuse.plan(source, tree, path, rules, codes, frozenset(supp.file))
        if plan.cached:
            return reuse.update(plan, [])
        only, dependencies = plan.only, reuse.dependencies
    found = (
        _findings(source, path, active, chunked, only, tree, dependencies, supp, reuse)
        if active
        else []
    )
    return found if reuse is None or plan is None else reuse.update(plan, found)


def _findings(
    source: str,
    path: str,
    active: Sequence[RuleSpec],
    chunked: bool,
    only: frozenset[int] | None,
    tree: ast.Module,
    dependencies: set[str] | None,
    supp: suppress.Suppressions | None,
    reuse: Incremental | None = None,
) -> list[Diagnostic]:
    """The findings of the `active` rules in `source` not covered by `supp` (None: read from
    `source` when there is a finding to filter), sorted: over-long statements left out, then
    what numlint.chunks keeps parsed at once or, when that is too large, in parts. A file that
    libcst cannot parse or analyse gives only that NUM000 (and the notes of the statements
    left out)."""
    given = source
    skipped: list[Diagnostic] = []
    if len(source) > MAX_STATEMENT_CHARS:
        original = source
        source, skipped = _without_huge_statements(source, tree, path)
        if source is not original:
            tree = syntax_tree(source, path)
            if isinstance(tree, list):  # cannot happen for whole statements; never crash
                return [*skipped, *tree]
    offsets = line_offsets(source)
    reduced = _reduced(source, tree, active, chunked, only, offsets)
    if only is None and len(reduced.text) > MAX_PARSE_CHARS:
        found, failed = _in_parts(source, path, active, chunked, tree, dependencies, offsets), []
    else:
        statements = None if reuse is None else reuse.statements
        found, failed = _parsed(
            reduced, source, path, active, tree, dependencies, offsets, statements
        )
    shown: list[Diagnostic] = []
    if skipped or (found and not failed):
        supp = suppress.parse(given) if supp is None else supp
        shown = [d for d in skipped if not supp.covers(d.code, d.name, (d.row,))]
        if not failed:
            shown += [d for d in found if not supp.covers(d.code, d.name, (d.row, d.end_row))]
    if failed:  # said as it is, whatever the suppressions
        shown += failed
    return sorted(set(shown), key=lambda d: (d.row, d.column, d.code, d.end_row, d.end_column))


def _reduced(
    source: str,
    tree: ast.Module,
    active: Sequence[RuleSpec],
    chunked: bool,
    only: frozenset[int] | None,
    offsets: Sequence[int],
) -> chunks.Reduced:
    """What of `source` is parsed: without the definitions no active rule needs (when
    `chunked`) and those whose first line is not in `only` (when given)."""
    if not chunked and only is None:
        return chunks.Reduced(source, tree.body)
    return chunks.reduce(source, tree, [r for r, _ in active] if chunked else [], offsets, only)


#: A statement longer than this (in characters) is not parsed by libcst, only checked by
#: CPython's parser, and reported as NUM000: libcst's tree of one 3 MB statement of calls takes
#: minutes and gigabytes, and no hand-written statement comes near this size.
MAX_STATEMENT_CHARS = 100_000


def _without_huge_statements(
    source: str, tree: ast.Module, path: str
) -> tuple[str, list[Diagnostic]]:
    """`source` with each statement over MAX_STATEMENT_CHARS turned into `pass` and empty
    lines (every other line unchanged), and the NUM000 finding that says so for each
    (none for plain data: a table of literals or a long string, where no rule reports)."""
    offsets = line_offsets(source)
    end_of = len(source)

    def size(node: ast.stmt) -> int:
        end = node.end_lineno or node.lineno
        stop = offsets[end] if end < len(offsets) else end_of
        return stop - offsets[node.lineno - 1]

    huge: list[ast.stmt] = []
    quiet: list[ast.stmt] = []
    todo: list[list[ast.stmt]] = [tree.body]
    while todo:
        for node in todo.pop():
            if size(node) <= MAX_STATEMENT_CHARS:
                continue
            bodies = [
                getattr(node, name)
                for name in ("body", "orelse", "finalbody")
                if isinstance(getattr(node, name, None), list)
            ]
            bodies += [h.body for h in getattr(node, "handlers", ())]
            bodies += [c.body for c in getattr(node, "cases", ())]
            first = min((b[0].lineno for b in bodies if b), default=node.lineno)
            if bodies and offsets[first - 1] - offsets[node.lineno - 1] <= MAX_STATEMENT_CHARS:
                todo.extend(bodies)  # the header is small: look at the statements inside
            elif not _plain_data(node):
                huge.append(node)
            else:  # no rule reports inside plain literals: left out without a finding
                quiet.append(node)
    if not huge and not quiet:
        return source, []
    out, pos, notes = [], 0, []
    for node in sorted([*huge, *quiet], key=lambda n: n.lineno):
        start, end = node.lineno, node.end_lineno or node.lineno
        a = offsets[start - 1]
        b = offsets[end] if end < len(offsets) else end_of
        if a < pos:
            continue  # on the lines of one already cut
        text = source[a:b]
        indent = text[: len(text) - len(text.lstrip(" \t"))]
        breaks = LINE_BREAK.findall(text)
        out += [source[pos:a], indent, "pass", *breaks]
        pos = b
        if node in quiet:
            continue
        where = f"line {start}" if start == end else f"lines {start}-{end}"
        notes.append(
            parse_error(
                path,
                f"not analysed: the statement on {where} is {b - a:,} characters long, over "
                f"numlint's limit of {MAX_STATEMENT_CHARS:,}; only its syntax was checked",
                start,
                node.col_offset + 1,
            )
        )
    out.append(source[pos:])
    return "".join(out), notes


#: More code than this (in characters, after numlint.chunks has left out what no rule
#: needs) is parsed in parts of whole top-level statements of at most MAX_PART_CHARS: libcst
#: holds about 0.9 GB per MB of code it parses.
MAX_PARSE_CHARS = 1_000_000
MAX_PART_CHARS = 400_000
#: At most this much of a file's code is linted in parts (about 15 s on one slow core): the
#: statements after it are reported as not analysed.
MAX_PARTS_CHARS = 800_000


def _in_parts(
    source: str,
    path: str,
    active: Sequence[RuleSpec],
    chunked: bool,
    tree: ast.Module,
    dependencies: set[str] | None,
    offsets: Sequence[int],
) -> list[Diagnostic]:
    """Lint a file too large to parse at once in parts: each part is some top-level
    statements plus the file's leading imports; the others are left out (definitions) or
    blanked (other statements), so every line keeps its number. NUM000 findings say so: on
    line 1 (what rules follow across functions is seen only within a part) and, past
    MAX_PARTS_CHARS, at the first statement not analysed."""
    end_of = len(source)
    body = tree.body
    first_other = next(
        (i for i, s in enumerate(body) if not isinstance(s, (ast.Import, ast.ImportFrom))),
        len(body),
    )
    parts: list[list[ast.stmt]] = [[]]
    size, last_line = 0, 0
    for stmt in body[first_other:]:
        end = stmt.end_lineno or stmt.lineno
        chars = _chars(stmt, offsets, end_of)
        if parts[-1] and size + chars > MAX_PART_CHARS and stmt.lineno > last_line:
            parts.append([])
            size = 0
        parts[-1].append(stmt)
        size += chars
        last_line = end
    parts = [p for p in parts if p] or [[]]
    found: list[Diagnostic] = []
    done = 0
    gc.freeze()  # the file's ast and the rest stay out of the collections between parts
    try:
        for n, part in enumerate(parts):
            size = sum(_chars(s, offsets, end_of) for s in part)
            if done and done + size > MAX_PARTS_CHARS:
                first = part[0]
                end = parts[-1][-1].end_lineno or parts[-1][-1].lineno
                found.append(
                    parse_error(
                        path,
                        f"not analysed: lines {first.lineno}-{end}, past the first "
                        f"{MAX_PARTS_CHARS:,} characters of code numlint lints in a file this "
                        "large; only their syntax was checked (split the file to lint it all)",
                        first.lineno,
                        first.col_offset + 1,
                    )
                )
                parts = parts[:n]
                break
            done += size
            found += _part(
                source, path, active, chunked, tree, dependencies, offsets, part, first_other
            )
            gc.collect()  # what the part made: its libcst tree holds cycles
    finally:
        gc.unfreeze()
    if len(parts) > 1:
        found.append(
            parse_error(
                path,
                f"analysed in {len(parts)} parts: the code to parse is over numlint's limit of "
                f"{MAX_PARSE_CHARS:,} characters; rules that follow values across functions "
                "see only the functions in the same part",
            )
        )
    return found


def _part(
    source: str,
    path: str,
    active: Sequence[RuleSpec],
    chunked: bool,
    tree: ast.Module,
    dependencies: set[str] | None,
    offsets: Sequence[int],
    part: list[ast.stmt],
    first_other: int,
) -> list[Diagnostic]:
    """The findings (or the NUM000 saying why there are none) of one part of a large file:
    the statements of `part`, the definitions of the others left out and the rest from
    `tree.body[first_other]` on blanked."""
    body = tree.body
    mine = {id(s) for s in part}
    blank = [s for s in body[first_other:] if id(s) not in mine and not isinstance(s, chunks.DEFS)]
    text = _blanked(source, offsets, blank)
    gone = {id(s) for s in blank}
    part_tree = ast.Module(body=[s for s in body if id(s) not in gone], type_ignores=[])
    only = frozenset(unit_start(s) for s in part if isinstance(s, chunks.DEFS))
    text_offsets = line_offsets(text)
    reduced = _reduced(text, part_tree, active, chunked, only, text_offsets)
    found, failed = _parsed(reduced, text, path, active, part_tree, dependencies, text_offsets)
    return failed or found


def _chars(stmt: ast.stmt, offsets: Sequence[int], end_of: int) -> int:
    """How many characters the lines of `stmt` take."""
    end = stmt.end_lineno or stmt.lineno
    return (offsets[end] if end < len(offsets) else end_of) - offsets[stmt.lineno - 1]


def _blanked(source: str, offsets: Sequence[int], stmts: Sequence[ast.stmt]) -> str:
    """`source` with the lines of `stmts` reduced to their line breaks."""
    out, pos = [], 0
    for stmt in sorted(stmts, key=lambda s: s.lineno):
        end = stmt.end_lineno or stmt.lineno
        a = offsets[stmt.lineno - 1]
        b = offsets[end] if end < len(offsets) else len(source)
        if a < pos:
            continue
        out += [source[pos:a], *LINE_BREAK.findall(source, a, b)]
        pos = b
    out.append(source[pos:])
    return "".join(out)


_PLAIN = (
    *(ast.Constant, ast.Dict, ast.List, ast.Tuple, ast.Set, ast.Name, ast.Attribute),
    *(ast.UnaryOp, ast.USub, ast.UAdd, ast.Load, ast.Store),
)


def _plain_data(node: ast.stmt) -> bool:
    """An assignment or expression of plain literals only (a table, a long string)."""
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.Expr)) and node.value is not None:
        return all(isinstance(n, _PLAIN) for n in ast.walk(node.value))
    return False


def _parsed(
    reduced: chunks.Reduced,
    source: str,
    path: str,
    active: Sequence[RuleSpec],
    tree: ast.Module,
    dependencies: set[str] | None,
    offsets: Sequence[int],
    statements: StatementParser | None = None,
) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """Parse what is left of `source` (whose CPython tree is `tree`), run the `active` rules
    in one walk: (their findings, []) or ([], the NUM000 saying why it could not be parsed
    or analysed). `statements`: a buffer's parser, reusing the statements it parsed before."""
    try:
        if statements is None:
            module = parse(reduced.text)
        else:
            module = statements.parse(reduced.text, reduced.top, reduced.lines, parse)
    except cst.ParserSyntaxError as exc:
        line = str(exc).strip().splitlines()[0] if str(exc).strip() else "syntax error"
        row = reduced.lines[exc.raw_line - 1] if reduced.lines else exc.raw_line
        return [], [parse_error(path, f"could not parse: {line}", row, exc.raw_column + 1)]
    except RecursionError:
        return [], [parse_error(path, "could not parse: the code is nested too deeply")]
    except Exception as exc:  # libcst raises assorted errors on odd input
        return [], [parse_error(path, f"could not parse: {exc}")]
    ctx = Context(module, path, source, tree)
    instances = [r(ctx, opts) for r, opts in active]
    try:
        walker = _Walker(ctx, instances)
        walker.walk(module)
    except RecursionError:
        return [], [parse_error(path, "could not analyse: the code is nested too deeply")]
    if dependencies is not None and ctx.used_project is not None:
        dependencies.update(ctx.used_project.dependencies)
    reports = [rep for rule in instances for rep in rule.reports] + walker.errors
    if not reports:
        return [], []
    positions = Positions(module, reduced.top, source, reduced.lines, offsets)
    return _locate(positions, path, reports), []


def active_rules(source: str, rules: Sequence[RuleSpec]) -> list[RuleSpec]:
    """The rules whose prefilter (NEEDS_TORCH, TRIGGERS, ALSO_REQUIRES, FILE_REQUIRES) `source`
    passes."""
    has_torch = "torch" in source
    found: dict[str, bool] = {}  # each word looked for once: rules share many
    families = _families(tuple(r for r, _ in rules))

    def spelled(words: Sequence[str]) -> bool:
        for word in words:
            hit = found.get(word)
            if hit is None:
                family = families.get(word)
                if family is None:
                    hit = found[word] = word in source
                else:  # the family's words, found by one search
                    pattern, members = family
                    seen = set(pattern.findall(source))
                    found.update((w, w in seen) for w in members)
                    hit = found[word]
            if hit:
                return True
        return False

    return [
        (r, opts)
        for r, opts in rules
        if (has_torch or not r.NEEDS_TORCH)
        and (not r.TRIGGERS or spelled(r.TRIGGERS))
        and (not r.ALSO_REQUIRES or spelled(r.ALSO_REQUIRES))
        and (r.FILE_REQUIRES is None or r.FILE_REQUIRES.search(source) is not None)
    ]


_DIGITS = "0123456789"


@functools.cache
def _families(rules: tuple[type[Rule], ...]) -> dict[str, tuple[re.Pattern[str], list[str]]]:
    """The rules' words that end in a digit, three or more sharing what precedes it (`e-6`,
    `e-7`, `e-8`), each with its family's search (`e-[0-9]`) and members: one search finds
    which of them a text spells, in place of a scan of the text for each. (The matches of the
    search cannot overlap: the shared part holds no digit.)"""
    words = {w for r in rules for w in (*r.TRIGGERS, *r.ALSO_REQUIRES)}
    by_stem: dict[str, list[str]] = {}
    for w in sorted(words):
        stem = w[:-1]
        if stem and w[-1] in _DIGITS and not any(c in _DIGITS for c in stem):
            by_stem.setdefault(stem, []).append(w)
    return {
        w: (re.compile(re.escape(stem) + "[0-9]"), members)
        for stem, members in by_stem.items()
        if len(members) >= 3
        for w in members
    }


def syntax_tree(source: str, path: str) -> ast.Module | list[Diagnostic]:
    """CPython's ast of the file, or the NUM000 finding saying why there is none."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return compile(source, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        row = exc.lineno or 1
        return [parse_error(path, f"could not parse: {exc.msg}", row, (exc.offset or 1))]
    except (RecursionError, MemoryError):
        return [parse_error(path, "could not parse: the code is nested too deeply")]
    except ValueError as exc:
        return [parse_error(path, f"could not parse: {exc}")]


def _locate(positions: Positions, path: str, reports: list[Report]) -> list[Diagnostic]:
    """Turn node-based reports into positioned diagnostics (positions only computed here)."""
    positions.prepare(
        [rep.node for rep in reports]
        + [r.node for rep in reports if rep.fix is not None for r in rep.fix.replacements]
        + [p for rep in reports for p, _ in rep.related if not isinstance(p, tuple)]
    )
    out = []
    for rep in reports:
        where = positions[rep.node]
        fix = None
        if rep.fix is not None:
            edits = []
            for repl in rep.fix.replacements:
                r = positions[repl.node]
                edits.append(
                    Edit(repl.code, r.start.line, r.start.column + 1, r.end.line, r.end.column + 1)
                )
            fix = Fix(rep.fix.applicability, rep.fix.message, tuple(edits))
        related = []
        for place, note in rep.related:
            if isinstance(place, tuple):
                related.append((*place, note))
            else:
                r = positions[place]
                related.append((path, r.start.line, r.start.column + 1, note))
        out.append(
            Diagnostic(
                rep.rule.CODE,
                rep.rule.NAME,
                rep.message,
                path,
                where.start.line,
                where.start.column + 1,
                where.end.line,
                where.end.column + 1,
                fix,
                confidence=rep.confidence,
                related=tuple(related),
            )
        )
    return out


def apply_fixes(
    source: str, diagnostics: Sequence[Diagnostic], unsafe: bool = False
) -> tuple[str, int]:
    """Apply the non-overlapping fixes that are allowed; return the text and how many."""
    offsets = line_offsets(source)

    def at(row: int, column: int) -> int:
        return offsets[row - 1] + column - 1

    allowed = {"safe", "unsafe"} if unsafe else {"safe"}
    chosen: list[tuple[int, int, str]] = []
    count = 0
    for d in diagnostics:
        if d.fix is None or d.fix.applicability not in allowed or not d.fix.edits:
            continue
        spans = [(at(e.row, e.column), at(e.end_row, e.end_column), e.content) for e in d.fix.edits]
        if any(s < ce and cs < e for s, e, _ in spans for cs, ce, _ in chosen):
            continue  # overlaps an edit already taken; the next pass picks it up
        chosen.extend(spans)
        count += 1
    for start, end, content in sorted(chosen, reverse=True):
        source = source[:start] + content + source[end:]
    return source, count
