"""Lint one source text: prefilter, parse once, run every enabled rule in one traversal."""

from __future__ import annotations

import ast
import contextlib
import gc
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import libcst as cst

from numlint import chunks, suppress
from numlint.analysis.context import Context
from numlint.diagnostic import PARSE_ERROR, Diagnostic, Edit, Fix, parse_error
from numlint.positions import LINE_BREAK, Positions, line_offsets
from numlint.rule import Report, Rule
from numlint.tree import fields, is_node

RuleSpec = tuple[type[Rule], dict[str, Any]]


class _InternalError(Rule):
    """Stands in for a rule that raised: its finding is a NUM000."""

    CODE = PARSE_ERROR
    NAME = "internal-error"
    MESSAGE = "internal error"


class _Walker:
    """One depth-first pass over the tree calling each rule's visit_/leave_ methods.

    Uses numlint.tree's field walk (libcst's own visitor rebuilds every node it passes).
    """

    def __init__(self, ctx: Context, rules: Sequence[Rule]) -> None:
        self.ctx = ctx
        self.errors: list[Report] = []
        self.visits: dict[type, list[Callable[[Any], Any]]] = {}
        self.leaves: dict[type, list[Callable[[Any], Any]]] = {}
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
        ctx.enter(node)
        for handler in self.visits.get(kind, ()):
            try:
                handler(node)
            except RecursionError:
                raise
            except Exception as exc:
                self._failed(handler, node, exc)
        for name in fields(kind):
            value = getattr(node, name)
            if type(value) in (list, tuple):
                for child in value:
                    if is_node(type(child)):
                        self.walk(child)
            elif is_node(type(value)):
                self.walk(value)
        for handler in self.leaves.get(kind, ()):
            try:
                handler(node)
            except RecursionError:
                raise
            except Exception as exc:
                self._failed(handler, node, exc)
        ctx.leave(node)

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


def lint(
    source: str,
    path: str,
    rules: Sequence[RuleSpec],
    chunked: bool = True,
    only: frozenset[int] | None = None,
    tree: ast.Module | None = None,
    dependencies: set[str] | None = None,
) -> list[Diagnostic]:
    """Every finding of `rules` in `source`, suppressions applied, sorted by position.

    `chunked`: parse only the definitions the active rules can need (numlint.chunks).
    `only`: leave out every top-level definition whose first line is not in it. `tree`:
    CPython's ast of `source`, when the caller has it. `dependencies`: filled with the
    other files (and directories) whose contents the findings depend on."""
    with collections_paused():
        return _lint(source, path, rules, chunked, only, tree, dependencies)


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
    dependencies: set[str] | None = None,
) -> list[Diagnostic]:
    active = active_rules(source, rules)
    if not active:
        return _syntax_check(source, path)
    # CPython's parser first (8% of a libcst parse): it rejects what libcst would take minutes
    # over, or crash on (a 10,000-long `not` chain overflows libcst's native stack).
    if tree is None:
        tree = syntax_tree(source, path)
        if isinstance(tree, list):
            return tree
    original, skipped = source, []
    if len(source) > MAX_STATEMENT_CHARS:
        source, skipped = _without_huge_statements(source, tree, path)
        if source is not original:
            tree = syntax_tree(source, path)
            if isinstance(tree, list):  # cannot happen for whole statements; never crash
                return [*skipped, *tree]
    if skipped:
        supp = suppress.parse(original)
        kept = _lint_tree(source, path, active, chunked, only, tree, dependencies)
        return sorted(
            {*kept, *(d for d in skipped if not supp.covers(d.code, d.name, (d.row,)))},
            key=lambda d: (d.row, d.column, d.code, d.end_row, d.end_column),
        )
    return _lint_tree(source, path, active, chunked, only, tree, dependencies)


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


def _lint_in_parts(
    source: str,
    path: str,
    active: Sequence[RuleSpec],
    chunked: bool,
    tree: ast.Module,
    dependencies: set[str] | None,
) -> list[Diagnostic]:
    """Lint a file too large to parse at once in parts: each part is some top-level
    statements plus the file's leading imports; the others are left out (definitions) or
    blanked (other statements), so every line keeps its number. NUM000 findings say so: on
    line 1 (what rules follow across functions is seen only within a part) and, past
    MAX_PARTS_CHARS, at the first statement not analysed."""
    offsets = line_offsets(source)
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
    gc.freeze()  # the file's ast and the rest stay out of the collections between parts
    try:
        found, notes, parts = _parts_findings(
            source, path, active, chunked, tree, dependencies, parts, first_other
        )
    finally:
        gc.unfreeze()
    supp = suppress.parse(source)
    kept = [d for d in found if not supp.covers(d.code, d.name, (d.row, d.end_row))]
    kept += [d for d in notes if not supp.covers(d.code, d.name, (d.row,))]
    if len(parts) > 1:
        note = parse_error(
            path,
            f"analysed in {len(parts)} parts: the code to parse is over numlint's limit of "
            f"{MAX_PARSE_CHARS:,} characters; rules that follow values across functions "
            "see only the functions in the same part",
        )
        if not supp.covers(note.code, note.name, (1,)):
            kept.append(note)
    return sorted(kept, key=lambda d: (d.row, d.column, d.code, d.end_row, d.end_column))


def _parts_findings(
    source: str,
    path: str,
    active: Sequence[RuleSpec],
    chunked: bool,
    tree: ast.Module,
    dependencies: set[str] | None,
    parts: list[list[ast.stmt]],
    first_other: int,
) -> tuple[set[Diagnostic], list[Diagnostic], list[list[ast.stmt]]]:
    """The findings of each part in turn, the NUM000 for the parts past MAX_PARTS_CHARS, and
    the parts linted."""
    offsets = line_offsets(source)
    end_of = len(source)
    body = tree.body
    found: set[Diagnostic] = set()
    notes: list[Diagnostic] = []
    done = 0
    for n, part in enumerate(parts):
        size = sum(_chars(s, offsets, end_of) for s in part)
        if done and done + size > MAX_PARTS_CHARS:
            first = part[0]
            end = parts[-1][-1].end_lineno or parts[-1][-1].lineno
            notes.append(
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
        mine = {id(s) for s in part}
        blank = [
            s for s in body[first_other:] if id(s) not in mine and not isinstance(s, chunks.DEFS)
        ]
        text = _blanked(source, offsets, blank)
        gone = {id(s) for s in blank}
        part_tree = ast.Module(body=[s for s in body if id(s) not in gone], type_ignores=[])
        only = frozenset(chunks.unit_start(s) for s in part if isinstance(s, chunks.DEFS))
        found.update(_lint_tree(text, path, active, chunked, only, part_tree, dependencies))
        del text, part_tree
        gc.collect()  # what the part made: its libcst tree holds cycles
    return found, notes, parts


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


def _lint_tree(
    source: str,
    path: str,
    active: Sequence[RuleSpec],
    chunked: bool,
    only: frozenset[int] | None,
    tree: ast.Module,
    dependencies: set[str] | None,
) -> list[Diagnostic]:
    """The findings of the `active` rules in `source`, whose CPython tree is `tree`."""
    reduced = chunks.Reduced(source, tree.body)
    if chunked or only is not None:
        rules_in = [r for r, _ in active] if chunked else []
        reduced = chunks.reduce(source, tree, rules_in, line_offsets(source), only)
    if only is None and len(reduced.text) > MAX_PARSE_CHARS:
        return _lint_in_parts(source, path, active, chunked, tree, dependencies)
    try:
        module = parse(reduced.text)
    except cst.ParserSyntaxError as exc:
        line = str(exc).strip().splitlines()[0] if str(exc).strip() else "syntax error"
        row = reduced.lines[exc.raw_line - 1] if reduced.lines else exc.raw_line
        return [parse_error(path, f"could not parse: {line}", row, exc.raw_column + 1)]
    except RecursionError:
        return [parse_error(path, "could not parse: the code is nested too deeply")]
    except Exception as exc:  # libcst raises assorted errors on odd input
        return [parse_error(path, f"could not parse: {exc}")]
    ctx = Context(module, path, source, tree)
    instances = [r(ctx, opts) for r, opts in active]
    try:
        walker = _Walker(ctx, instances)
        walker.walk(module)
    except RecursionError:
        return [parse_error(path, "could not analyse: the code is nested too deeply")]
    if dependencies is not None and ctx.used_project is not None:
        dependencies.update(ctx.used_project.dependencies)
    reports = [rep for rule in instances for rep in rule.reports] + walker.errors
    if not reports:
        return []
    diagnostics = _locate(Positions(module, reduced.top, source, reduced.lines), path, reports)
    supp = suppress.parse(source)
    kept = [d for d in diagnostics if not supp.covers(d.code, d.name, (d.row, d.end_row))]
    return sorted(set(kept), key=lambda d: (d.row, d.column, d.code, d.end_row, d.end_column))


def active_rules(source: str, rules: Sequence[RuleSpec]) -> list[RuleSpec]:
    """The rules whose prefilter (NEEDS_TORCH, TRIGGERS, ALSO_REQUIRES) `source` passes."""
    has_torch = "torch" in source
    return [
        (r, opts)
        for r, opts in rules
        if (has_torch or not r.NEEDS_TORCH)
        and (not r.TRIGGERS or any(t in source for t in r.TRIGGERS))
        and (not r.ALSO_REQUIRES or any(t in source for t in r.ALSO_REQUIRES))
    ]


def _syntax_check(source: str, path: str) -> list[Diagnostic]:
    """NUM000 when CPython's own parser rejects the file (about 8% of a libcst parse)."""
    tree = syntax_tree(source, path)
    return tree if isinstance(tree, list) else []


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
