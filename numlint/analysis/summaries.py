"""What functions, methods and model classes return, and what their callers pass them.

A value made in one function and used in another: a helper returning `F.softmax(...)`, a
model whose `forward` (or whose `nn.Sequential`'s last layer) is a sigmoid, a loss helper
whose callers pass it probabilities, a function returning a sum of squares. Summaries are
read from CPython's ast of each module, lazily: a module is parsed only when a question
leads into it (an import, a call), and kept per file by its size and modification time.
Imports are resolved to files on disk (relative imports, and absolute ones inside the
package the file belongs to, then inside the project: a script in `steps/` importing
`model.net` of its repository); callers are looked for in the project's files whose text calls
the function (the project: the nearest directory above with a pyproject.toml, setup.py,
setup.cfg or .git). A parameter nobody calls is unknown, never assumed hazardous.
Recursion is bounded.

Kinds: "softmax", "sigmoid" (probabilities that underflow to exactly 0 and 1),
"sum_of_squares" (0 where the vector is 0), "norm" (a norm, or the root of a sum of
squares: 0 there too; a helper whose 1-d case returns `x.abs()` is one), "cosine"
(reaches ±1), "nonzero" (only the
entries or rows with a nonzero test kept: `x[:, x.sum(0) != 0]`, whose sums are not 0).
"""

from __future__ import annotations

import ast
import itertools
import os
import re
import unicodedata
import warnings
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from numlint.analysis.names import bound_names, import_one, imported_module, parameters
from numlint.analysis.tables import (
    COUNT_FUNCTIONS,
    FILL_FUNCTIONS,
    FILL_METHODS,
    HOST_METHODS,
    HOST_MODULES,
    JOINS,
    LOG_PROBABILITIES,
    NO_GRAD,
    NOT_DIFFERENTIABLE,
    PROBS_OF_LOGITS,
    ROUNDING,
    SIGMOID_FUNCTIONS,
    SIGMOID_MODULES,
    SOFTMAX_FUNCTIONS,
    SOFTMAX_MODULES,
    SUM_REDUCTIONS,
    TRANSPARENT_FUNCTIONS,
    TRANSPARENT_METHODS,
    ZERO_FUNCTIONS,
    ZERO_METHODS,
)
from numlint.positions import line_offsets

_SOFTMAX = SOFTMAX_FUNCTIONS
_SIGMOID = SIGMOID_FUNCTIONS
_COSINE = frozenset({"torch.cosine_similarity", "torch.nn.functional.cosine_similarity"})
_UNIT = frozenset({"torch.nn.functional.normalize"})
_LOG_SOFTMAX = frozenset(q for q, kind in LOG_PROBABILITIES.items() if kind == "softmax")
_RELU = frozenset({"torch.relu", "torch.nn.functional.relu", "torch.nn.functional.relu6"})
_MODULE_KINDS = {
    "torch.nn.ReLU": "relu",
    "torch.nn.ReLU6": "relu",
    **dict.fromkeys(SOFTMAX_MODULES, "softmax"),
    **dict.fromkeys(SIGMOID_MODULES, "sigmoid"),
    "torch.nn.CosineSimilarity": "cosine",
    "torch.nn.LogSoftmax": "log_softmax",
    "torch.nn.Softplus": "softplus",
}
_SEQUENTIAL = ("torch.nn.Sequential", "torch.nn.modules.container.Sequential")

_SUMS = frozenset({"sum", "torch.sum", "mean", "torch.mean"})
_CLAMPS = frozenset({"clamp", "clip", "clamp_", "clip_"})
_NORMS = frozenset(
    {"torch.norm", "torch.linalg.norm", "torch.linalg.vector_norm", "torch.functional.norm"}
)
_DEPTH = 12
#: Methods whose result is an array when their receiver is one.
_ARRAY_KEEPING = frozenset(
    {"sum", "mean", "max", "min", "std", "var", "astype", "reshape", "transpose", "copy",
     "clip", "squeeze", "flatten", "ravel", "cumsum", "dot", "round", "prod", "repeat"}
)  # fmt: skip
#: Steps one question may take: a bound on fan-out through many reassignments.
_STEPS = 5000
#: Files larger than this are not read for summaries (generated code).
_MAX_BYTES = 2_000_000


@dataclass(frozen=True)
class Origin:
    """Where a value of `kind` is made: a file and 1-based position, and what makes it."""

    kind: str
    filename: str
    row: int
    column: int
    what: str
    #: Whether the value reached the question through a call or a caller (a summary).
    crossed: bool = False
    #: How sure: a sum of squares of a difference of a tensor with itself is 0 on the
    #: diagonal ("high"), of two tensors "medium", of one vector "low".
    confidence: str = "high"


class Function:
    """One function or method; what its body assigns and returns is read on first use."""

    def __init__(self, node: ast.FunctionDef | ast.AsyncFunctionDef, cls: str | None) -> None:
        self.node = node
        self.cls = cls
        args = node.args
        every = (*args.posonlyargs, *args.args, *args.kwonlyargs)
        self.params = [a.arg for a in every]
        self.annotations = {a.arg: a.annotation for a in every if a.annotation is not None}
        self._read = False
        self._assigned: dict[str, list[ast.expr]] = {}
        #: value (by id) -> the statement assigning it, for `reaching`.
        self._statement: dict[int, ast.Assign | ast.AnnAssign] = {}
        self._unpacked: dict[str, list[tuple[ast.expr, int]]] = {}
        self._entries: dict[str, list[tuple[ast.expr, int | None]]] = {}
        self._returns: list[ast.expr] = []
        self._self_attrs: dict[str, list[ast.expr]] = {}
        self._object_attrs: dict[tuple[str, str], list[ast.expr]] = {}
        self._imports: dict[str, str] | None = None
        self._parents: dict[int, ast.AST] | None = None
        self._loads: dict[str, list[ast.Name]] | None = None
        #: Whether its text makes no tensor requiring grad (of_arguments_only), once asked.
        self.of_arguments: bool | None = None
        #: The parameter it returns as given (returned_parameter); False: not asked yet.
        self.passes: tuple[int, str, frozenset[str]] | None | bool = False

    @property
    def parents(self) -> dict[int, ast.AST]:
        """Each node of the body (by id) -> the node holding it; built on first use."""
        if self._parents is None:
            self._parents = {
                id(c): n for n in _walk_body(self.node) for c in ast.iter_child_nodes(n)
            }
        return self._parents

    @property
    def loads(self) -> dict[str, list[ast.Name]]:
        """Each name the body reads -> its reads; built on first use."""
        if self._loads is None:
            self._loads = {}
            for n in _walk_body(self.node):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                    self._loads.setdefault(n.id, []).append(n)
        return self._loads

    @property
    def assigned(self) -> dict[str, list[ast.expr]]:
        """Every assignment to a local name, in source order."""
        self._body()
        return self._assigned

    @property
    def unpacked(self) -> dict[str, list[tuple[ast.expr, int]]]:
        """Tuple-unpacking assignments: name -> (value, index)."""
        self._body()
        return self._unpacked

    @property
    def entries(self) -> dict[str, list[tuple[ast.expr, int | None]]]:
        """Writes into a local's entries: name -> (value, index in an unpacking or None);
        `t[c] = v` and `t[c], u[c] = f(x)`."""
        self._body()
        return self._entries

    @property
    def returns(self) -> list[ast.expr]:
        self._body()
        return self._returns

    @property
    def self_attrs(self) -> dict[str, list[ast.expr]]:
        """`self.x = ...` assignments in the body."""
        self._body()
        return self._self_attrs

    @property
    def object_attrs(self) -> dict[tuple[str, str], list[ast.expr]]:
        """`obj.x = ...` assignments in the body to a name other than `self`."""
        self._body()
        return self._object_attrs

    def imports(self, module: str, package: bool) -> dict[str, str]:
        """The imports inside the body (`from pkg.heads import Head` in a method)."""
        if self._imports is None:
            self._imports = {}
            for node in _walk_statements(self.node):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    self._imports.update(import_one(node, module, package))
        return self._imports

    def _body(self) -> None:
        if self._read:
            return
        self._read = True
        for node in _walk_statements(self.node):
            if isinstance(node, ast.Assign):
                self._statement[id(node.value)] = node
                for t in node.targets:
                    self._target(t, node.value)
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                self._statement[id(node.value)] = node
                self._target(node.target, node.value)
            elif isinstance(node, ast.Return) and node.value is not None:
                self._returns.append(node.value)

    def reaching(self, name: str, ref: ast.expr) -> list[ast.expr]:
        """The values of `name` that can reach `ref` (a use of it in this body): the
        assignments before it, from the last one that runs whenever `ref` runs (in a block
        that also holds `ref`: `x = self.fc(x); x = x.softmax(-1); return x` gives the
        softmax alone). Assignments in a loop around `ref` count only before it."""
        at = (ref.lineno, ref.col_offset)
        stmts = self._statement
        before = sorted(
            (stmts[id(v)] for v in self.assigned.get(name, [])
             if (stmts[id(v)].end_lineno or 0, stmts[id(v)].end_col_offset or 0) <= at),
            key=lambda s: (s.lineno, s.col_offset),
        )  # fmt: skip
        blocks = self._blocks(ref)
        for i in range(len(before) - 1, -1, -1):
            if self._block(before[i]) in blocks:
                before = before[i:]
                break
        return [s.value for s in before if s.value is not None]

    def _block(self, stmt: ast.AST) -> tuple[int, str] | None:
        """The statement list holding `stmt`: its parent (by id) and the parent's field."""
        parent = self.parents.get(id(stmt), self.node)
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            if any(s is stmt for s in getattr(parent, field, ()) or ()):
                return (id(parent), field)
        return None

    def _blocks(self, node: ast.AST) -> set[tuple[int, str] | None]:
        """Every statement list around `node`."""
        out: set[tuple[int, str] | None] = set()
        up: ast.AST | None = node
        while up is not None:
            if isinstance(up, ast.stmt):
                out.add(self._block(up))
            up = self.parents.get(id(up))
        return out

    def _target(self, t: ast.expr, value: ast.expr) -> None:
        if isinstance(t, ast.Name):
            self._assigned.setdefault(t.id, []).append(value)
        elif isinstance(t, ast.Tuple):
            for i, e in enumerate(t.elts):
                if isinstance(e, ast.Name):
                    self._unpacked.setdefault(e.id, []).append((value, i))
                elif isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name):
                    self._entries.setdefault(e.value.id, []).append((value, i))
        elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
            self._entries.setdefault(t.value.id, []).append((value, None))
        elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
            if t.value.id == "self":
                self._self_attrs.setdefault(t.attr, []).append(value)
            else:  # `pl_module.head = Head(...)`: an object the function is given
                self._object_attrs.setdefault((t.value.id, t.attr), []).append(value)


def _result_not_differentiated(f: Function | None, call: ast.Call) -> bool:
    """The caller only compares what `call` returns (`dists = pairwise(x)`, `dists < r`), or
    hands it to a call with no gradient (`argsort`, `.long()`): nothing is differentiated
    through it."""
    if f is None:
        return False
    parents = f.parents
    parent = parents.get(id(call))
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1:
        target = parent.targets[0]
        if not isinstance(target, ast.Name):
            return False
        return _name_not_differentiated(f, target.id, set())
    return _read_without_gradient(parents, call)


def _name_not_differentiated(f: Function, name: str, seen: set[str]) -> bool:
    """Every read of `name` in `f` ends in a comparison, an index or a report, also through
    the variables computed from it (`r = ratio.mean(0)`, `thr = t * torch.exp(-r)`, `pos = x
    >= thr`): nothing is differentiated through it."""
    seen.add(name)
    if len(seen) > 12:
        return False
    reads = f.loads.get(name, [])
    for read in reads:
        carried = _carried_into(f.parents, read)
        if carried is None or (
            carried and carried not in seen and not _name_not_differentiated(f, carried, seen)
        ):
            return False
    return bool(reads)


def _carried_into(parents: dict[int, ast.AST], node: ast.AST) -> str | None:
    """The variable a value is computed into (`thr = t * torch.exp(-k * node.mean(0))`), or
    "" where it ends compared, indexed or counted on the way; None where it leaves otherwise
    (returned, stored on an object, handed to backward)."""
    for _ in range(16):
        parent = parents.get(id(node))
        if isinstance(parent, (ast.Compare, ast.FormattedValue)):
            return ""
        if isinstance(parent, ast.Attribute) and parent.attr in NOT_DIFFERENTIABLE:
            return ""
        if isinstance(parent, ast.Call) and node is not parent.func:
            fn = parent.func
            called = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if called in NOT_DIFFERENTIABLE or called in _REPORTING:
                return ""
        if isinstance(parent, ast.Assign):
            targets = parent.targets
            if len(targets) == 1 and isinstance(targets[0], ast.Name):
                return targets[0].id
            return None
        if not isinstance(
            parent, (ast.BinOp, ast.UnaryOp, ast.Subscript, ast.Attribute, ast.Call, ast.keyword)
        ):
            return None
        node = parent
    return None


def _read_without_gradient(parents: dict[int, ast.AST], node: ast.AST) -> bool:
    parent = parents.get(id(node))
    for _ in range(8):
        if isinstance(parent, (ast.BinOp, ast.UnaryOp)):
            node, parent = parent, parents.get(id(parent))
            continue
        call = parents.get(id(parent))
        if (
            isinstance(parent, ast.Attribute)
            and parent.attr in TRANSPARENT_METHODS
            and (isinstance(call, ast.Call) and call.func is parent)
        ):
            node, parent = call, parents.get(id(call))
            continue
        break
    if isinstance(parent, (ast.Compare, ast.FormattedValue)):
        return True  # compared, or formatted into a string
    if isinstance(parent, ast.Attribute) and isinstance(parents.get(id(parent)), ast.Call):
        return parent.attr in NOT_DIFFERENTIABLE
    if isinstance(parent, ast.Call) and node in parent.args:
        fn = parent.func
        name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
        return name in NOT_DIFFERENTIABLE or name in _REPORTING
    if isinstance(parent, ast.keyword):
        call = parents.get(id(parent))
        fn = call.func if isinstance(call, ast.Call) else None
        return getattr(fn, "attr", getattr(fn, "id", "")) in _REPORTING
    return False


#: Calls that print, format or record a value: what they are given leaves autograd
#: (`print(psnr(y, x))`, `writer.add_scalar("psnr", psnr(y, x), step)`).
_REPORTING = frozenset(
    {"print", "str", "repr", "format", "float", "int", "add_scalar", "add_scalars",
     "log_metrics", "set_postfix", "set_description", "info", "debug", "warning"}
)  # fmt: skip


_NUMBERS = re.compile(r"\b(float|int|bool|ndarray|str)\b")
_TENSORS = re.compile(r"\b(Tensor|torch|Any|Parameter|Module)\b")


def returns_numbers(annotation: str) -> bool:
    """A return annotation of Python numbers or NumPy arrays (`float`, `dict[str, float]`,
    `np.ndarray`), with no tensor in it: no gradient leaves the function."""
    return bool(_NUMBERS.search(annotation)) and not _TENSORS.search(annotation)


#: `nn.Module` methods that return the module itself.
_MODULE_SELF = frozenset(
    {"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "train", "eval",
     "requires_grad_", "to_empty"}
)  # fmt: skip


#: The fields of a statement (or an except clause, a case) that hold statements.
_STATEMENT_FIELDS = ("body", "handlers", "orelse", "finalbody", "cases")


def _walk_statements(func: ast.AST) -> Iterator[ast.AST]:
    """The statements of a function body in _walk_body's order, nested functions' included,
    nested classes' not (expressions hold no statements: they are not entered)."""
    todo = list(getattr(func, "body", []))
    holders = (ast.stmt, ast.excepthandler, ast.match_case)
    class_def = ast.ClassDef
    while todo:
        node = todo.pop()
        if isinstance(node, ast.stmt):
            yield node
        for name in _STATEMENT_FIELDS:
            value = getattr(node, name, None)
            if value:
                todo.extend(
                    v for v in value if isinstance(v, holders) and not isinstance(v, class_def)
                )


def _walk_body(func: ast.AST) -> Iterator[ast.AST]:
    """Every node of a function body, nested functions included, nested classes not (the
    children of a node in ast.iter_child_nodes' order, read here without its generators)."""
    todo = list(getattr(func, "body", []))
    node_type, class_def = ast.AST, ast.ClassDef
    while todo:
        node = todo.pop()
        yield node
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, node_type) and not isinstance(item, class_def):
                        todo.append(item)
            elif isinstance(value, node_type) and not isinstance(value, class_def):
                todo.append(value)


class Module:
    """A file's top-level names, read at once; function bodies and calls on first use."""

    def __init__(self, path: str, name: str, tree: ast.Module, text: str) -> None:
        self.path = path
        self.name = name
        self.text = text
        self.tree = tree
        self.imports: dict[str, str] = {}
        #: Modules it imports every public name of (`from utils import *`).
        self.stars: list[str] = []
        self.functions: dict[str, Function] = {}  # "f" or "Class.method"
        self.classes: dict[str, list[str]] = {}  # name -> base names
        self.globals: dict[str, list[ast.expr]] = {}
        self._class_attrs: dict[str, dict[str, list[ast.expr]]] = {}
        self._attrs: dict[str, dict[str, list[ast.expr]]] = {}
        #: Per callee name, its calls (calls_of).
        self._calls: dict[str, list[tuple[str | None, ast.Call]]] = {}
        self._offsets: list[int] | None = None
        self._plain: bool | None = None  # identifiers spelled as read (_plain), once asked
        self._spellers: dict[str, Callable[[ast.AST], bool]] = {}
        self._scan(tree.body, None)

    def _scan(self, stmts: list[ast.stmt], cls: str | None) -> None:
        package = self.path.endswith("__init__.py")
        for stmt in stmts:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self.imports.update(import_one(stmt, self.name, package))
                if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                    star = imported_module(stmt, self.name, package)
                    if star:
                        self.stars.append(star)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                key = f"{cls}.{stmt.name}" if cls else stmt.name
                self.functions[key] = Function(stmt, cls)
            elif isinstance(stmt, ast.ClassDef) and cls is None:
                self.classes[stmt.name] = [_dotted(b) or "" for b in stmt.bases]
                self._class_attrs[stmt.name] = {}
                self._scan(stmt.body, stmt.name)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    if isinstance(t, ast.Name) and stmt.value is not None:
                        table = self._class_attrs[cls] if cls else self.globals
                        table.setdefault(t.id, []).append(stmt.value)
            elif isinstance(stmt, (ast.If, ast.Try, ast.With)) or type(stmt).__name__ == "TryStar":
                for block in ("body", "orelse", "finalbody"):
                    self._scan(getattr(stmt, block, []), cls)
                for handler in getattr(stmt, "handlers", []):
                    self._scan(handler.body, cls)

    def attrs(self, cls: str) -> dict[str, list[ast.expr]]:
        """Class-level assignments and `self.x = ...` in any method of `cls`."""
        found = self._attrs.get(cls)
        if found is None:
            found = {k: list(v) for k, v in self._class_attrs.get(cls, {}).items()}
            for f in self.functions.values():
                if f.cls == cls:
                    for attr, values in f.self_attrs.items():
                        found.setdefault(attr, []).extend(values)
            self._attrs[cls] = found
        return found

    def calls_of(self, name: str) -> list[tuple[str | None, ast.Call]]:
        """The calls of `name` by the last part of the callee's name: (enclosing function
        key, call), the functions' in their order, then the statements outside them (the
        module's and its classes' bodies: a lambda there). A file whose text never says
        `name(` has none (no walk); otherwise only the functions and statements whose lines
        spell `name` as a word are walked."""
        if f"{name}(" not in self.text:
            return []
        found = self._calls.get(name)
        if found is None:
            spelled = self._spelled(name)
            found = []
            for key, f in self.functions.items():
                if spelled(f.node):
                    found += [(key, call) for call in _body_calls(f.node, name, spelled)]
            for stmt in self._top_statements():
                if spelled(stmt):
                    found += [(None, n) for n in ast.walk(stmt) if _calls_name(n, name)]
            self._calls[name] = found
        return found

    def _top_statements(self) -> Iterator[ast.stmt]:
        """The statements outside functions: the module's and its classes' bodies."""
        for stmt in self.tree.body:
            if isinstance(stmt, ast.ClassDef):
                yield from (
                    s
                    for s in stmt.body
                    if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                )
            elif not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield stmt

    def loss_lambda(self, call: ast.Call) -> bool:
        """`call` lies in a lambda outside any function of a file named for a loss
        (`class Distance(Enum): EUCLIDEAN = lambda x, y: distance(x, y)` in a triplet
        loss's module): a piece the loss computes, differentiated with it."""
        if not _LOSS_NAME.search(Path(self.path).stem):
            return False
        return any(
            isinstance(lam, ast.Lambda) and any(n is call for n in ast.walk(lam.body))
            for stmt in self._top_statements()
            for lam in ast.walk(stmt)
        )

    def spells(self, node: ast.AST, name: str) -> bool:
        """Whether the lines of `node` (a statement; a definition's decorators too) hold
        `name` as a word (see _spelled): where they do not, no name, attribute or keyword
        in it is `name`."""
        spelled = self._spellers.get(name)
        if spelled is None:
            spelled = self._spellers[name] = self._spelled(name)
        return spelled(node) or any(spelled(d) for d in getattr(node, "decorator_list", ()))

    def _spelled(self, name: str) -> Callable[[ast.AST], bool]:
        """Whether the lines of a node (a statement) hold `name` as a word: always, where the
        text may spell an identifier otherwise (Python reads identifiers NFKC-normalised)."""
        text = self.text
        if self._plain is None:
            self._plain = _plain(text)
        if not name or not self._plain:
            return lambda node: True
        hits = []
        size, end_of = len(name), len(text)
        at = text.find(name)
        while at >= 0:
            after = at + size
            if (at == 0 or text[at - 1] not in _WORD) and (
                after == end_of or text[after] not in _WORD
            ):
                hits.append(at)
            at = text.find(name, at + 1)
        if self._offsets is None:
            self._offsets = line_offsets(text)
        offsets = self._offsets

        def spelled(node: ast.AST) -> bool:
            first = node.lineno - 1  # type: ignore[attr-defined]
            last = node.end_lineno or node.lineno  # type: ignore[attr-defined]
            if first >= len(offsets):
                return True
            end = offsets[last] if last < len(offsets) else end_of
            i = bisect_left(hits, offsets[first])
            return i < len(hits) and hits[i] < end

        return spelled


def _plain(text: str) -> bool:
    """Whether every identifier in `text` is spelled as Python reads it: ASCII, or a text
    that NFKC normalisation leaves unchanged."""
    return text.isascii() or unicodedata.normalize("NFKC", text) == text


#: The characters of an ASCII identifier.
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _calls_name(node: ast.AST, name: str) -> bool:
    """A call whose callee's name ends in `name` (`name(...)`, `x.name(...)`)."""
    if not isinstance(node, ast.Call):
        return False
    fn = node.func
    if isinstance(fn, ast.Attribute):
        return fn.attr == name
    return isinstance(fn, ast.Name) and fn.id == name


def _body_calls(
    func: ast.AST, name: str, spelled: Callable[[ast.AST], bool] | None = None
) -> list[ast.Call]:
    """The calls of `name` in a function body, in _walk_body's order (its loop, inlined).
    `spelled`: Module._spelled's test for `name`; a statement whose lines do not spell it is
    not walked into (a nested definition is: its decorators lie above its lines)."""
    found = []
    todo = list(getattr(func, "body", []))
    node_type, class_def, call = ast.AST, ast.ClassDef, ast.Call
    statement, definition = ast.stmt, (ast.FunctionDef, ast.AsyncFunctionDef)
    while todo:
        node = todo.pop()
        if isinstance(node, call):
            if _calls_name(node, name):
                found.append(node)
        elif (
            spelled is not None
            and isinstance(node, statement)
            and not isinstance(node, definition)
            and not spelled(node)
        ):
            continue  # nothing in it calls `name`
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, node_type) and not isinstance(item, class_def):
                        todo.append(item)
            elif isinstance(value, node_type) and not isinstance(value, class_def):
                todo.append(value)
    return found


#: Bases that make no class a module.
_PLAIN_BASES = frozenset({"object", "ABC", "Generic", "Protocol"})


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def module_name(path: str) -> tuple[str, str]:
    """(dotted module name, package root directory) of a file, from its `__init__.py` chain."""
    p = Path(os.path.abspath(path))
    parts = [] if p.name == "__init__.py" else [p.stem]
    d = p.parent
    while (d / "__init__.py").exists() and d.parent != d:
        parts.insert(0, d.name)
        d = d.parent
    return ".".join(parts) or p.stem, str(d)


_FILES: dict[tuple[str, int, int], Module | None] = {}
#: The same summaries by path: a file linted after it was searched for callers is not
#: parsed or summarised again, its functions' bodies are read once.
_LATEST: dict[str, Module] = {}


def known_tree(path: str, text: str) -> ast.Module | None:
    """The ast of `text`, the content of file `path`, where a search of callers parsed it."""
    mod = None if path.startswith("<") else _latest(os.path.abspath(path), text)
    return mod.tree if mod is not None else None


def _latest(path: str, text: str) -> Module | None:
    """The summary kept of file `path` (absolute) when it was made of `text`."""
    mod = _LATEST.get(path)
    return mod if mod is not None and mod.text == text else None


def _load(path: str, source: str | None = None, tree: ast.Module | None = None) -> Module | None:
    """The summary of one file (kept by size and modification time); `source` and `tree`:
    the text being linted and its ast, when the caller has them."""
    if source is None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        key = (path, st.st_size, st.st_mtime_ns)
        if key in _FILES:
            return _FILES[key]
        text = file_text(path)  # read once for the text searches and the summary
        mod = None if text is None else _parse(path, module_name(path)[0], text)
        if len(_FILES) > 256:  # bounded memory: an ast is about 1 KB a line
            _FILES.clear()
            _LATEST.clear()
        _FILES[key] = mod
        if mod is not None:
            _LATEST[path] = mod
        return mod
    found = _latest(path, source)
    return found if found is not None else _parse(path, module_name(path)[0], source, tree)


def _parse(path: str, name: str, text: str, tree: ast.Module | None = None) -> Module | None:
    if tree is None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # `1if x else 2`: not the user's concern here
                tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    try:
        return Module(path, name, tree, text)
    except RecursionError:
        return None


class Project:
    """Summaries around one file being linted (its source given), read lazily from disk."""

    def __init__(self, path: str, source: str, tree: ast.Module | None = None) -> None:
        self.path = os.path.abspath(path) if not path.startswith("<") else path
        self.source = source
        self.tree = tree
        self._main: Module | None | bool = False
        self._modules: dict[str, Module | None] = {}
        self._root = module_name(self.path)[1] if not path.startswith("<") else ""
        #: Other files whose contents a finding depended on.
        self.dependencies: set[str] = set()
        self._stack: set[tuple[int, str]] = set()
        #: Per question: what each name was found to hold, and how many steps were taken.
        self._names: dict[tuple[str, str, str, bool, tuple[int, int] | None], Origin | None] = {}
        self._snippet: set[int] = set()
        self._steps = 0
        self._no_grad: dict[tuple[str, str], bool] = {}
        self._differentiated_memo: dict[tuple[str, str], bool] = {}
        self.averaged: dict[str, tuple[int, ...]] = {}  # see averaged_parameters
        self._trained_memo: dict[str, bool] = {}
        self._neighbours_of: dict[tuple[str, str | None, bool], list[Module]] = {}
        self._texts: dict[str, str | None] = {}  # the project's files, as _neighbours read them
        self._instance_calls_of: dict[
            tuple[str, str], list[tuple[Module, str | None, ast.Call]]
        ] = {}

    # ---- modules ----

    @property
    def main(self) -> Module | None:
        if self._main is False:
            self._main = _load(self.path, self.source, self.tree)
        return self._main  # type: ignore[return-value]

    def _module(self, dotted: str) -> Module | None:
        if dotted in self._modules:
            return self._modules[dotted]
        found = None
        # the package's root, then the project's (a script in `steps/` importing
        # `model.phasen` of the repository it runs in)
        roots = [self._root] if self._root else []
        if roots and (top := project_root(self.path)) not in roots and os.path.isdir(top):
            roots.append(top)
        for root in roots:
            base = os.path.join(root, *dotted.split("."))
            candidate = next(
                (c for c in (base + ".py", os.path.join(base, "__init__.py")) if os.path.isfile(c)),
                None,
            )
            if candidate is not None:
                found = _load(candidate)
                self.dependencies.add(candidate)
                break
        self._modules[dotted] = found
        return found

    def lookup(self, mod: Module, name: str, depth: int = 0) -> tuple[Module, str] | None:
        """Where a top-level name of `mod` is defined: (module, name), following imports."""
        if name in mod.functions or name in mod.classes or name in mod.globals:
            return mod, name
        target = mod.imports.get(name)
        if target is None or depth > 4 or "." not in target:
            return None
        modname, _, attr = target.rpartition(".")
        other = self._module(modname)
        if other is None:
            other = self._module(target)  # `from pkg import module`
            return None if other is None else (other, "")
        return self.lookup(other, attr, depth + 1)

    def star_binding(
        self, modules: list[str], name: str, depth: int = 0
    ) -> tuple[bool, str | None]:
        """What `name` means in a file that imports `*` from `modules` (in order): whether
        any of them is a file of this project, and the qualified name the first one that
        binds `name` gives it (importing it, defining it, or taking it from its own `import
        *`), or None."""
        found_any = False
        for dotted in modules:
            mod = self._module(dotted)
            if mod is None:
                continue
            found_any = True
            if name in mod.imports:
                return True, mod.imports[name]
            if name in mod.functions or name in mod.classes or name in mod.globals:
                return True, f"{dotted}.{name}"
            if mod.stars and depth < 3:
                _, inner = self.star_binding(mod.stars, name, depth + 1)
                if inner is not None:
                    return True, inner
        return found_any, None

    def _contracts_with_itself(self, mod: Module, f: Function, call: ast.Call) -> bool:
        """`call` passes the same value for two parameters of `f` (of `mod`) whose product
        every return of `f` sums (`def dot(x, y): return (x * y).sum(-1)`, called `dot(v,
        v)`): a sum of squares."""
        pairs = set()
        for r in f.returns:
            qual = self.qualname(mod, r.func) if isinstance(r, ast.Call) else None
            summed = (
                _reduced(qual, r) if isinstance(r, ast.Call) and _reduces(qual, r.func) else None
            )
            if not (isinstance(summed, ast.BinOp) and isinstance(summed.op, ast.Mult)):
                return False
            a, b = summed.left, summed.right
            if not (isinstance(a, ast.Name) and isinstance(b, ast.Name) and a.id != b.id):
                return False
            pairs.add((a.id, b.id))
        if len(pairs) != 1:
            return False
        pair = pairs.pop()
        if not all(p in f.params for p in pair):
            return False
        offset = _bound_offset(f)
        given = [argument(call, f.params.index(p) - offset, p) for p in pair]
        return None not in given and ast.dump(given[0]) == ast.dump(given[1])  # type: ignore[arg-type]

    def torch_alias(self, dotted: str) -> str | None:
        """What a name of this project's own package is bound to, when that is a torch name:
        `kornia.core.sin` -> "torch.sin" for `sin = torch.sin` in kornia/core/_backend.py,
        re-exported by kornia/core/__init__.py (or `from torch import sin` there)."""
        modname, _, attr = dotted.rpartition(".")
        mod = self._module(modname) if modname else None
        for _ in range(4):
            if mod is None:
                return None
            target = mod.imports.get(attr)
            if target is not None:
                if target == "torch" or target.startswith("torch."):
                    return target
                modname, _, attr = target.rpartition(".")
                mod = self._module(modname) if modname else None
                continue
            # `nn = torch.nn` beside `nn = None` where the import of torch failed
            values = [v for v in mod.globals.get(attr, []) if not _is_none(v)]
            if len(values) != 1 or attr in mod.functions or attr in mod.classes:
                return None
            found = self.qualname(mod, values[0])
            return found if found is not None and found.startswith("torch.") else None
        return None

    def function_named(self, name: str) -> tuple[Module, Function] | None:
        """The function a top-level name of the file being linted calls, defined there or
        imported from another file of the project."""
        if self.main is None:
            return None
        target = self.lookup(self.main, name)
        if target is None or target[1] not in target[0].functions:
            return None
        return target[0], target[0].functions[target[1]]

    def qualname(self, mod: Module, node: ast.expr) -> str | None:
        dotted = _dotted(node)
        if dotted is None:
            return None
        root, _, rest = dotted.partition(".")
        base = mod.imports.get(root)
        if base is None:
            return dotted if root == "torch" else None
        return f"{base}.{rest}" if rest else base

    # ---- questions ----

    def origin(
        self, expr: ast.expr, func: str | None, kinds: tuple[str, ...], params: bool = True
    ) -> Origin | None:
        """Where `expr` (an expression in function `func` of the file being linted: "f" or
        "Class.method", None at module level) gets a value of one of `kinds`."""
        mod = self.main
        if mod is None:
            return None
        self._names.clear()
        self._snippet = {id(n) for n in ast.walk(expr)}
        self._steps = 0
        found = self._kind(mod, expr, func, 0, params)
        return found if found is not None and found.kind in kinds else None

    def _kind(
        self, mod: Module, expr: ast.expr, func: str | None, depth: int, params: bool = False
    ) -> Origin | None:
        self._steps += 1
        if depth > _DEPTH or self._steps > _STEPS:
            return None
        key = (id(expr), func or "")
        if key in self._stack:
            return None
        self._stack.add(key)
        try:
            return self._kind_of(mod, expr, func, depth, params)
        finally:
            self._stack.discard(key)

    def _kind_of(
        self, mod: Module, expr: ast.expr, func: str | None, depth: int, params: bool
    ) -> Origin | None:
        f = mod.functions.get(func) if func else None
        sub = self._kind
        if isinstance(expr, ast.Subscript):
            inner = expr.value
            if isinstance(expr.slice, ast.Constant) and isinstance(expr.slice.value, int):
                return self._element(mod, inner, expr.slice.value, func, depth)
            found = sub(mod, inner, func, depth + 1, params)
            if found is None and _nonzero_mask(expr.slice):
                here = Origin("", mod.path, expr.lineno, expr.col_offset + 1, "")
                return _at(here, "nonzero", f"the nonzero rows kept in {_where(mod, func)}")
            return found
        if isinstance(expr, ast.Name):
            ref = None if id(expr) in self._snippet else expr
            return self._name(mod, expr.id, f, func, depth, params, ref)
        if isinstance(expr, ast.Attribute):
            if isinstance(expr.value, ast.Name) and expr.value.id == "self" and f and f.cls:
                values = self._attr(mod, f.cls, expr.attr)
                return self._all(mod, values, func, depth)
            if expr.attr == "probs":  # `pi.probs` of `OneHotCategorical(logits=...)`
                made = sub(mod, expr.value, func, depth + 1, params)
                if made is not None and made.kind.startswith("probs:"):
                    kind = made.kind.split(":", 1)[1]
                    return replace(made, kind=kind, what=f"the probabilities of {made.what}")
            return None
        if isinstance(expr, ast.BinOp) and isinstance(
            expr.op, (ast.Mult, ast.Div, ast.Pow, ast.Add)
        ):
            return self._positive_arithmetic(mod, expr, func, depth)
        if not isinstance(expr, ast.Call):
            return None
        fn = expr.func
        qual = self.qualname(mod, fn)
        here = Origin("", mod.path, expr.lineno, expr.col_offset + 1, "")
        if qual in TRANSPARENT_FUNCTIONS and expr.args:  # `torch.gather(lp, -1, y)`
            return sub(mod, expr.args[0], func, depth + 1, params)
        if qual in JOINS and expr.args and f is not None:
            return self._joined(mod, expr.args[0], f, func, depth)
        if qual in _SOFTMAX or (isinstance(fn, ast.Attribute) and fn.attr == "softmax"):
            return _at(here, "softmax", f"the softmax in {_where(mod, func)}")
        if qual in PROBS_OF_LOGITS and any(k.arg == "logits" for k in expr.keywords):
            kind = f"probs:{PROBS_OF_LOGITS[qual]}"  # its `.probs` is a softmax of the logits
            return _at(here, kind, f"the distribution made from logits in {_where(mod, func)}")
        if qual in _SIGMOID or (
            isinstance(fn, ast.Attribute) and fn.attr == "sigmoid" and not expr.args
        ):
            return _at(here, "sigmoid", f"the sigmoid in {_where(mod, func)}")
        if qual in _LOG_SOFTMAX or (
            isinstance(fn, ast.Attribute) and fn.attr == "log_softmax" and qual is None
        ):
            return _at(here, "log_softmax", f"the log_softmax in {_where(mod, func)}")
        if qual in _COSINE:
            return _at(here, "cosine", f"the cosine similarity in {_where(mod, func)}")
        if qual in COUNT_FUNCTIONS or (
            isinstance(fn, ast.Attribute) and f"torch.{fn.attr}" in COUNT_FUNCTIONS and qual is None
        ):  # `torch.bincount(y * k + p, minlength=k * k)`: a confusion matrix
            return _at(here, "count", f"the count in {_where(mod, func)}")
        if qual in _UNIT:
            return _at(here, "unit", f"the normalised vector in {_where(mod, func)}")
        if qual in _NORMS or (isinstance(fn, ast.Attribute) and fn.attr == "norm" and qual is None):
            return _at(here, "norm", f"the norm in {_where(mod, func)}")
        if qual == "torch.exp" or (
            isinstance(fn, ast.Attribute) and fn.attr == "exp" and qual is None and not expr.args
        ):
            return _at(here, "positive", f"the exp in {_where(mod, func)}")
        floor = _clamp_floor(qual, fn, expr)
        if floor is None and self._floored_by_setting(mod, f, qual, fn, expr):
            floor = 1.0  # `x.clamp(min=self.eps)` with `self.eps = eps`, `eps=1e-8`
        if floor is None and self._floored_at_zero(mod, qual, fn, expr):
            floor = 0.0  # `torch.max(r - m, torch.zeros_like(r))`
        if floor is not None and floor > 0:
            return _at(here, "positive", f"the clamp above 0 in {_where(mod, func)}")
        if floor == 0:
            return _at(here, "floored", f"the clamp at 0 in {_where(mod, func)}")
        if qual in _RELU or (
            isinstance(fn, ast.Attribute) and fn.attr == "relu" and qual is None and not expr.args
        ):
            return _at(here, "relu", f"the ReLU in {_where(mod, func)}")
        if qual == "torch.nn.functional.softplus":
            return _at(here, "softplus", f"the softplus in {_where(mod, func)}")
        if qual == "torch.abs" or (
            isinstance(fn, ast.Attribute) and fn.attr == "abs" and qual is None and not expr.args
        ):
            return _at(here, "abs", f"the absolute value in {_where(mod, func)}")
        if qual == "torch.sqrt" or (
            isinstance(fn, ast.Attribute) and fn.attr == "sqrt" and qual is None and not expr.args
        ):
            rooted = expr.args[0] if qual and expr.args else getattr(fn, "value", None)
            inner = sub(mod, rooted, func, depth + 1) if rooted is not None else None
            if inner is not None and inner.kind == "sum_of_squares":
                return _at(here, "norm", f"the norm in {_where(mod, func)}")
            if inner is not None and inner.kind == "positive":
                return _at(here, "positive", f"the root of a positive value in {_where(mod, func)}")
            return None
        if _reduces(qual, fn):  # a mean of squares is 0 exactly where their sum is: an RMS
            summed = _reduced(qual, expr)
            if summed is not None and id(summed) not in self._snippet:
                summed = _value_of(f, summed)
            if summed is not None and _square(summed):
                found = _at(here, "sum_of_squares", f"the sum of squares in {_where(mod, func)}")
                return replace(found, confidence=_difference_grade(summed))
            if summed is not None and _test(summed) and not _mean(qual, fn):
                return _at(here, "count", f"the count in {_where(mod, func)}")
            inner = sub(mod, summed, func, depth + 1) if summed is not None else None
            if inner is not None and inner.kind == "positive":
                return _at(here, "positive", f"the sum of positive values in {_where(mod, func)}")
            if inner is not None and inner.kind in ("softmax", "sigmoid") and _mean(qual, fn):
                # an average of distributions (`p.mean(0)` over a batch) is in [0, 1] too
                return _at(here, f"mean:{inner.kind}", f"an average of {inner.what}")
            return None
        if isinstance(fn, ast.Attribute) and qual is None:
            if fn.attr in TRANSPARENT_METHODS:
                return sub(mod, fn.value, func, depth + 1, params)
            if isinstance(fn.value, ast.Name) and fn.value.id == "self" and f and f.cls:
                return self._method(mod, f.cls, fn.attr, depth) or self._call_object(
                    mod, fn, f, func, depth
                )
            cls = self._instance(mod, fn.value, f, func, depth)  # `model.forward(x)`
            if cls is not None:
                return self._method(cls[0], cls[1], fn.attr, depth)
            found = self._instance(mod, fn, f, func, depth)  # `pl_module.head(x)`
            return self._method(found[0], found[1], "forward", depth) if found else None
        if isinstance(fn, ast.Name):
            if fn.id == "self" and f and f.cls:
                return self._method(mod, f.cls, "forward", depth)
            if f is not None and (fn.id in f.assigned or fn.id in f.params):
                return self._call_object(mod, fn, f, func, depth)
            target = self.lookup(mod, fn.id)
            if target is not None:
                tmod, tname = target
                if tname in tmod.functions:
                    if self._contracts_with_itself(tmod, tmod.functions[tname], expr):
                        what = f"`{fn.id}(x, x)` in {_where(mod, func)}"
                        return _crossed(_at(here, "sum_of_squares", what))
                    return self._returns(tmod, tname, depth)
                if tname in tmod.globals:
                    return self._call_object(tmod, fn, None, None, depth)
            return None
        return self._constructed(mod, fn, func, depth)

    def _floored_by_setting(
        self, mod: Module, f: Function | None, qual: str | None, fn: ast.expr, call: ast.Call
    ) -> bool:
        """A clamp whose lower bound is a `self.` setting the class sets to a positive
        number (`min=self.eps`, `self.eps = eps` with `eps=1e-8`)."""
        low = _clamp_bound(qual, fn, call)
        if not (
            isinstance(low, ast.Attribute)
            and isinstance(low.value, ast.Name)
            and low.value.id == "self"
            and f is not None
            and f.cls
        ):
            return False
        for cmod, cname in self._mro(mod, f.cls):
            values = cmod.attrs(cname).get(low.attr)
            if values:
                return _positive_setting(values, cmod.functions.get(f"{cname}.__init__"))
        return False

    def _joined(
        self, mod: Module, parts: ast.expr, f: Function, func: str | None, depth: int
    ) -> Origin | None:
        """`torch.cat(counts)`: the kind every part has, for a list or tuple written out or a
        list the function fills with `.append(...)` (`counts = []`, `counts.append(c)`)."""
        if isinstance(parts, (ast.List, ast.Tuple)):
            return self._all(mod, list(parts.elts), func, depth)
        if not isinstance(parts, ast.Name):
            return None
        made = f.reaching(parts.id, parts)
        if not made or not all(isinstance(v, ast.List) and not v.elts for v in made):
            return None  # only `name = []`: what else fills it is not followed
        appended = [
            n.args[0]
            for n in _walk_body(f.node)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "append"
            and _dotted(n.func.value) == parts.id
            and len(n.args) == 1
        ]
        return self._all(mod, appended, func, depth)

    def _floored_at_zero(self, mod: Module, qual: str | None, fn: ast.expr, call: ast.Call) -> bool:
        """`torch.max(x, torch.zeros_like(x))`, `torch.maximum(x, x.new_zeros(()))`,
        `x.max(torch.tensor(0.0))`: the elementwise maximum with zeros, a clamp at 0."""
        if qual in _MAXIMA and len(call.args) == 2:
            other = call.args[1]
        elif qual is None and isinstance(fn, ast.Attribute) and fn.attr in ("max", "maximum"):
            other = call.args[0] if len(call.args) == 1 else None
        else:
            return False
        if not isinstance(other, ast.Call):  # `torch.max(x, 0)`: a maximum along dim 0
            return False
        if self._zeros(mod, other):
            return True
        made = self.qualname(mod, other.func)
        spot = FILL_FUNCTIONS.get(made or "")
        if made is None and isinstance(other.func, ast.Attribute):
            spot = FILL_METHODS.get(other.func.attr)
        fill = argument(other, *spot) if spot is not None else None
        return isinstance(fill, ast.Constant) and fill.value == 0 and fill.value is not False

    def _positive_arithmetic(
        self, mod: Module, expr: ast.BinOp, func: str | None, depth: int
    ) -> Origin | None:
        """`a * b`, `a / b` or `a + b` of two positive values or positive numbers (`gauss /
        gauss.sum()`, `p ** (1 / t)` of a softmax p, `x.exp() + 1`): positive; any other
        such operation has no kind here."""
        if isinstance(expr.op, ast.Pow):  # a positive base to any real power
            base = self._kind(mod, expr.left, func, depth + 1)
            if base is None or base.kind not in _POSITIVE_KINDS:
                return None
        else:
            for side in (expr.left, expr.right):
                if isinstance(side, ast.Constant) and isinstance(side.value, (int, float)):
                    if side.value > 0 and not isinstance(side.value, bool):
                        continue
                    return None
                found = self._kind(mod, side, func, depth + 1)
                if found is None or found.kind not in _POSITIVE_KINDS:
                    return None
        here = Origin("", mod.path, expr.lineno, expr.col_offset + 1, "")
        return _at(here, "positive", f"the product of positive values in {_where(mod, func)}")

    def _name(
        self, mod: Module, name: str, f: Function | None, func: str | None, depth: int,
        params: bool, ref: ast.expr | None = None,
    ) -> Origin | None:  # fmt: skip
        at = (ref.lineno, ref.col_offset) if ref is not None else None
        key = (mod.path, func or "", name, params, at)
        if key in self._names:  # found already, or being found (a cycle: `h = layer(h)`)
            return self._names[key]
        self._names[key] = None
        found = self._names[key] = self._name_of(mod, name, f, func, depth, params, ref)
        return found

    def _name_of(
        self, mod: Module, name: str, f: Function | None, func: str | None, depth: int,
        params: bool, ref: ast.expr | None,
    ) -> Origin | None:  # fmt: skip
        if f is not None:
            reaching = f.reaching(name, ref) if ref is not None and name in f.assigned else []
            if name in f.assigned and (reaching or name not in f.unpacked):
                if not reaching and name in f.params and params and ref is not None:
                    return self._callers(mod, func, f, name, depth)
                values = reaching or f.assigned[name]
                if name in f.entries and all(self._zeros(mod, v) for v in values):
                    return self._filled(mod, f.entries[name], func, depth)
                return self._all(mod, values, func, depth)
            if name in f.unpacked:  # `pred, m = model(x)` (then `pred = pred.squeeze()`)
                outs = [
                    _counts_of(mod, self, v, i) or self._element(mod, v, i, func, depth)
                    for v, i in f.unpacked[name]
                ]
                return _same(outs)
            if name in f.params and params:
                return self._callers(mod, func, f, name, depth)
            return None
        if name in mod.globals:
            return self._all(mod, mod.globals[name], None, depth)
        return None

    def _all(
        self, mod: Module, values: list[ast.expr], func: str | None, depth: int
    ) -> Origin | None:
        return _same([self._kind(mod, v, func, depth + 1) for v in values]) if values else None

    def _zeros(self, mod: Module, value: ast.expr) -> bool:
        """`torch.zeros(k)`, `torch.zeros_like(x)`, `x.new_zeros(k)`: a tensor of zeros."""
        if not isinstance(value, ast.Call):
            return False
        fn = value.func
        made = self.qualname(mod, fn)
        if made in ZERO_FUNCTIONS:
            return True
        return made is None and isinstance(fn, ast.Attribute) and fn.attr in ZERO_METHODS

    def _filled(
        self, mod: Module, writes: list[tuple[ast.expr, int | None]], func: str | None, depth: int
    ) -> Origin | None:
        """A table of zeros whose entries are all written with counts (`tps[c], fps[c] =
        stat_scores(pred, target, c)`, `conf[i, j] = ((p == i) & (y == j)).sum()`) is a
        count table: an entry never written stays 0."""
        outs = [
            self._kind(mod, v, func, depth + 1)
            if i is None
            else self._element(mod, v, i, func, depth)
            for v, i in writes
        ]
        found = _same(outs)
        return found if found is not None and found.kind == "count" else None

    def _element(
        self, mod: Module, expr: ast.expr, index: int, func: str | None, depth: int
    ) -> Origin | None:
        """Element `index` of a tuple `expr` returns (`p, _ = model(x)`, `model(x)[0]`) or
        of a tuple written out (`mu, var = h[:, 0], F.relu(h[:, 1])`)."""
        if isinstance(expr, (ast.Tuple, ast.List)):
            elts = expr.elts
            if index < len(elts) and not any(isinstance(e, ast.Starred) for e in elts):
                return self._kind(mod, elts[index], func, depth + 1)
            return None
        f = mod.functions.get(func) if func else None
        if isinstance(expr, ast.Name) and f is not None and depth < 8:
            # `out = model(x)`, then `out[0]`: the one value that reaches this use
            values = f.assigned.get(expr.id, [])
            if len(values) > 1 and id(expr) not in self._snippet:
                values = f.reaching(expr.id, expr)
            if len(values) == 1 and expr.id not in f.unpacked:
                return self._element(mod, values[0], index, func, depth + 1)
            return None
        if not isinstance(expr, ast.Call):
            return None
        returns = self._return_exprs(mod, expr, func, depth)
        if returns is None:
            return None
        rmod, rfunc, values = returns
        picked = [v.elts[index] for v in values if isinstance(v, ast.Tuple) and index < len(v.elts)]
        if not picked or len(picked) != len(values):
            return None
        return _crossed(self._all(rmod, picked, rfunc, depth))

    def _return_exprs(
        self, mod: Module, call: ast.Call, func: str | None, depth: int
    ) -> tuple[Module, str, list[ast.expr]] | None:
        """The return expressions of what `call` calls, when it is a project function,
        method or model."""
        fn = call.func
        f = mod.functions.get(func) if func else None
        if isinstance(fn, ast.Name):
            if fn.id == "self" and f and f.cls:
                return self._method_returns(mod, f.cls, "forward")
            if f is not None and fn.id in f.assigned:
                cls = self._instance(mod, fn, f, func, depth)
                return self._method_returns(*cls, "forward") if cls else None
            target = self.lookup(mod, fn.id)
            if target and target[1] in target[0].functions:
                tmod, tname = target
                return tmod, tname, tmod.functions[tname].returns
            return None
        if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name):
            if fn.value.id == "self" and f and f.cls:
                found = self._method_returns(mod, f.cls, fn.attr)
                if found:
                    return found
                cls = self._instance(mod, fn, f, func, depth)
                return self._method_returns(*cls, "forward") if cls else None
        return None

    def _called_returns(
        self, call: ast.expr, func: str | None
    ) -> tuple[Module, Function, list[ast.expr]] | None:
        """The project function or method (also one a base class defines) that `call` (in
        function `func` of the file being linted) calls, and what it returns."""
        mod = self.main
        if mod is None or not isinstance(call, ast.Call):
            return None
        found = self._return_exprs(mod, call, func, 0)
        if found is None or not found[2]:
            return None
        rmod, rfunc, values = found
        f = rmod.functions.get(rfunc)
        return None if f is None else (rmod, f, values)

    def detached(self, call: ast.expr, func: str | None) -> bool:
        """Whether `call` calls a project function every return of which is detached
        (`return x.grad.detach()`, `g = p.grad.detach(); return g`)."""
        found = self._called_returns(call, func)
        return found is not None and all(_detached(v, found[1]) for v in found[2])

    def segment_reduced(self, call: ast.expr, func: str | None) -> SegmentReduce | None:
        """The parameter whose segment sum or mean a project function returns on every path
        (`return torch.scatter_reduce(out, dim, index, src, reduce, include_self=False)`,
        `return out.index_add_(0, index, src)`), and the parameter naming its reduction when
        the caller chooses it: a helper that sums a graph's edges per node."""
        found = self._called_returns(call, func)
        if found is None:
            return None
        rmod, f, values = found
        seen = {self._segment_of(rmod, f, v) for v in values}
        if len(seen) != 1 or None in seen:
            return None
        src, reduce = seen.pop()  # type: ignore[misc]
        offset = _bound_offset(f)
        defaults = _param_defaults(f)
        if reduce is not None:
            default = defaults.get(reduce)
            if not (isinstance(default, ast.Constant) and default.value in SUM_REDUCTIONS):
                return None
        return SegmentReduce(
            f.params.index(src) - offset,
            src,
            None if reduce is None else f.params.index(reduce) - offset,
            reduce,
        )

    def _segment_of(
        self, mod: Module, f: Function, expr: ast.expr
    ) -> tuple[str, str | None] | None:
        """(the summed parameter, the parameter naming the reduction or None) of a return."""
        if isinstance(expr, ast.Name) and len(f.assigned.get(expr.id, [])) == 1:
            expr = f.assigned[expr.id][0]
        if not isinstance(expr, ast.Call):
            return None
        fn = expr.func
        qual = self.qualname(mod, fn)
        if qual == "torch.scatter_reduce":
            src, reduce = argument(expr, 3, "src"), argument(expr, 4, "reduce")
        elif qual is None and isinstance(fn, ast.Attribute) and fn.attr in _SEGMENT_METHODS:
            name = "source" if fn.attr.startswith("index_add") else "src"
            src = argument(expr, 2, name)  # after `dim` and `index`
            chosen = fn.attr.startswith("scatter_reduce")
            reduce = argument(expr, 3, "reduce") if chosen else ast.Constant("sum")
        else:
            return None
        if not (isinstance(src, ast.Name) and src.id in f.params):
            return None
        if isinstance(reduce, ast.Constant) and reduce.value in SUM_REDUCTIONS:
            return src.id, None
        if isinstance(reduce, ast.Name) and reduce.id in f.params:
            return src.id, reduce.id
        return None

    def length_mask(self, call: ast.expr, func: str | None) -> bool:
        """Whether `call` calls a project function every return of which compares positions
        with lengths (`torch.arange(n) < lengths[:, None]`, also cast or converted before it
        returns): a padding mask, which keeps the first `length` entries of every row."""
        found = self._called_returns(call, func)
        if found is None:
            return False
        rmod, f, values = found
        compared: list[ast.Compare] = []
        tests = all(self._length_test(rmod, f, v, set(), compared) for v in values)
        return tests and bool(compared)

    def _length_test(
        self, mod: Module, f: Function, expr: ast.expr, seen: set[str], compared: list
    ) -> bool:
        """`expr` is a comparison of positions with lengths on every path (each one found
        is added to `compared`)."""
        if len(seen) > 6:
            return False
        if isinstance(expr, ast.Name):
            if expr.id in seen:
                return True  # `mask = torch.as_tensor(mask, ...)`: the other values decide
            values = f.assigned.get(expr.id)
            seen = seen | {expr.id}
            return bool(values) and all(
                self._length_test(mod, f, v, seen, compared) for v in values
            )
        if isinstance(expr, ast.Call):
            fn = expr.func
            if isinstance(fn, ast.Attribute) and fn.attr in _LENGTH_MASK_KEEPS:
                return self._length_test(mod, f, fn.value, seen, compared)  # `m.to(dtype)`
            if self.qualname(mod, fn) in ("torch.as_tensor", "torch.tensor") and expr.args:
                return self._length_test(mod, f, expr.args[0], seen, compared)
            return False
        if not isinstance(expr, ast.Compare) or len(expr.ops) != 1:
            return False
        op = expr.ops[0]
        if isinstance(op, (ast.Lt, ast.LtE)):
            position = expr.left
        elif isinstance(op, (ast.Gt, ast.GtE)):
            position = expr.comparators[0]
        else:
            return False
        if not any(
            isinstance(n, ast.Call) and self.qualname(mod, n.func) == "torch.arange"
            for n in ast.walk(position)
        ):
            return False
        compared.append(expr)
        return True

    def _method_returns(
        self, mod: Module, cls: str, name: str
    ) -> tuple[Module, str, list[ast.expr]] | None:
        for cmod, cname in self._mro(mod, cls):
            key = f"{cname}.{name}"
            if key in cmod.functions:
                return cmod, key, cmod.functions[key].returns
        return None

    def _returns(self, mod: Module, key: str, depth: int) -> Origin | None:
        return _crossed(self._all(mod, mod.functions[key].returns, key, depth))

    # ---- array kind: NumPy arrays and Python numbers, not tensors ----

    def array(self, expr: ast.expr, func: str | None) -> bool:
        """Whether `expr` (in function `func` of the file being linted) holds a NumPy array
        or a Python number wherever it runs, by data flow through assignments, the return
        values of project functions and what their callers pass."""
        mod = self.main
        if mod is None:
            return False
        self._arrays: dict[tuple[str, str, str, tuple[int, int] | None], bool] = {}
        self._snippet = {id(n) for n in ast.walk(expr)}
        self._steps = 0
        return self._array(mod, expr, func, 0) is True

    def _array(self, mod: Module, expr: ast.expr, func: str | None, depth: int) -> bool | None:
        """True: an array or a number; None: a number literal (either kind); False: a tensor
        or unknown."""
        self._steps += 1
        if depth > _DEPTH or self._steps > _STEPS:
            return False
        if isinstance(expr, ast.Constant):
            return None if isinstance(expr.value, (int, float)) else False
        if isinstance(expr, ast.UnaryOp):
            return self._array(mod, expr.operand, func, depth + 1)
        if isinstance(expr, ast.BinOp):
            left = self._array(mod, expr.left, func, depth + 1)
            if left is False:
                return False
            right = self._array(mod, expr.right, func, depth + 1)
            if right is False:
                return False
            return True if left or right else None
        if isinstance(expr, ast.Subscript):
            return self._array(mod, expr.value, func, depth + 1) is True
        f = mod.functions.get(func) if func else None
        if isinstance(expr, ast.Name):
            return self._array_name(mod, expr, f, func, depth)
        if isinstance(expr, ast.Attribute):
            qual = self.qualname(mod, expr)
            if qual is not None:
                return qual.startswith(HOST_MODULES)
            return expr.attr == "T" and self._array(mod, expr.value, func, depth + 1) is True
        if not isinstance(expr, ast.Call):
            return False
        fn = expr.func
        if isinstance(fn, ast.Name) and not (f is not None and fn.id in f.assigned):
            target = self.lookup(mod, fn.id)
            if target is not None and target[1] in target[0].functions:
                tmod, tname = target
                return self._all_arrays(tmod, tname, tmod.functions[tname].returns, depth)
        qual = self.qualname(mod, fn)
        if qual is not None:
            return qual.startswith(HOST_MODULES)
        if isinstance(fn, ast.Attribute):
            if fn.attr in HOST_METHODS:
                return True
            if fn.attr in _ARRAY_KEEPING:
                return self._array(mod, fn.value, func, depth + 1) is True
            if isinstance(fn.value, ast.Name) and fn.value.id == "self" and f and f.cls:
                found = self._method_returns(mod, f.cls, fn.attr)
                return found is not None and self._all_arrays(*found, depth)
        return False

    def _all_arrays(self, mod: Module, func: str, values: list[ast.expr], depth: int) -> bool:
        return bool(values) and all(self._array(mod, v, func, depth + 1) for v in values)

    def _array_name(
        self, mod: Module, ref: ast.Name, f: Function | None, func: str | None, depth: int
    ) -> bool | None:
        at = None if id(ref) in self._snippet else (ref.lineno, ref.col_offset)
        key = (mod.path, func or "", ref.id, at)
        if key in self._arrays:
            return self._arrays[key]
        self._arrays[key] = False  # a cycle (`x = x - x.mean()` in a loop) proves nothing
        found = self._array_name_of(mod, ref, f, func, depth)
        self._arrays[key] = found
        return found

    def _array_name_of(
        self, mod: Module, ref: ast.Name, f: Function | None, func: str | None, depth: int
    ) -> bool | None:
        name = ref.id
        if f is None:
            values = mod.globals.get(name, [])
            return bool(values) and all(self._array(mod, v, None, depth + 1) for v in values)
        if name in f.unpacked:
            return False
        snippet = id(ref) in self._snippet
        if name in f.assigned:
            values = [] if snippet else f.reaching(name, ref)
            if values or snippet or name not in f.params:
                values = values or f.assigned[name]
                return all(self._array(mod, v, func, depth + 1) for v in values)
        if name not in f.params or depth > 8:
            return False
        if _annotated_array(f.annotations.get(name)):
            return True
        index = f.params.index(name) - _bound_offset(f)
        args = [
            (cmod, caller, arg)
            for cmod, caller, call in self.known_calls(mod, f)
            if (arg := argument(call, index, name)) is not None
        ]
        return bool(args) and all(self._array(m, a, c, depth + 1) for m, c, a in args)

    def _method(self, mod: Module, cls: str, name: str, depth: int) -> Origin | None:
        found = self._method_returns(mod, cls, name)
        if found is None:
            return None
        rmod, key, values = found
        return _crossed(self._all(rmod, values, key, depth))

    def loss_wrapper(
        self, call: ast.Call, func: str | None, losses: tuple[frozenset[str], frozenset[str]]
    ) -> tuple[int, Origin] | None:
        """A call (in function `func` of the file being linted) of a project function, method
        or loss module whose parameter reaches the input of one of `losses` (functions,
        module classes) as it is: (the argument's position at this call, where that loss is
        called). `self.loss(y, t)` with `def loss(self, z, t): return self.loss_func(z, t)`;
        `criterion(p, y)` with `criterion = FocalLoss()` whose `forward(inputs, targets)`
        calls `F.binary_cross_entropy_with_logits(inputs, targets)`."""
        mod = self.main
        if mod is None:
            return None
        target = self._return_exprs(mod, call, func, 0)
        if target is None and isinstance(call.func, ast.Name):  # a module-level or given one
            f = mod.functions.get(func) if func else None
            found = self._instance(mod, call.func, f, func, 0)
            target = self._method_returns(*found, "forward") if found else None
        if target is None:
            return None
        tmod, key, _ = target
        callee = tmod.functions[key]
        params = callee.params[1:] if callee.cls is not None else callee.params
        for inner in _walk_body(callee.node):
            if not isinstance(inner, ast.Call) or not self._is_loss(tmod, callee, inner, losses):
                continue
            given = _loss_input(inner)
            if isinstance(given, ast.Name) and given.id in params:
                if given.id in callee.assigned or given.id in callee.unpacked:
                    continue  # rebound before the loss: not what the caller passed
                where = Origin("", tmod.path, inner.lineno, inner.col_offset + 1, "")
                what = f"the loss that {_where(tmod, key)} calls"
                return params.index(given.id), _at(where, "loss", what)
        return None

    def _is_loss(
        self,
        mod: Module,
        f: Function,
        call: ast.Call,
        losses: tuple[frozenset[str], frozenset[str]],
    ) -> bool:
        """`call` (in `f` of `mod`) calls one of `losses`: a function by name, a loss module
        made inline, or a `self.` attribute set to one in the class (`self.loss_func =
        F.binary_cross_entropy_with_logits`, `self.criterion = nn.BCEWithLogitsLoss()`)."""
        functions, modules = losses
        fn = call.func
        if self.qualname(mod, fn) in functions:
            return True
        if isinstance(fn, ast.Call) and self.qualname(mod, fn.func) in modules:
            return True
        if (
            isinstance(fn, ast.Attribute)
            and isinstance(fn.value, ast.Name)
            and fn.value.id == "self"
            and f.cls
        ):
            values = self._attr(mod, f.cls, fn.attr)
            return bool(values) and all(
                self.qualname(mod, v) in functions
                or (isinstance(v, ast.Call) and self.qualname(mod, v.func) in modules)
                for v in values
            )
        return False

    def _mro(self, mod: Module, cls: str, depth: int = 0) -> list[tuple[Module, str]]:
        out = [(mod, cls)]
        if depth > 4:
            return out
        for base in mod.classes.get(cls, []):
            target = self.lookup(mod, base.split(".")[0]) if base else None
            if target and target[1] in target[0].classes:
                out.extend(self._mro(target[0], target[1], depth + 1))
        return out

    def _attr(self, mod: Module, cls: str, attr: str) -> list[ast.expr]:
        for cmod, cname in self._mro(mod, cls):
            values = cmod.attrs(cname).get(attr)
            if values:
                return values
        return []

    def _instance(
        self, mod: Module, obj: ast.expr, f: Function | None, func: str | None, depth: int
    ) -> tuple[Module, str] | None:
        """The project class `obj` is an instance of: `Class(...)` itself, or assigned from
        it locally, on `self`, at module level, or a parameter annotated with the class."""
        values: list[ast.expr] = []
        if isinstance(obj, ast.Name):
            if f is not None and obj.id in f.assigned:
                values = f.assigned[obj.id]
            elif f is not None and obj.id in f.annotations:
                return self._class(mod, f.annotations[obj.id])
            elif f is not None and obj.id in f.params and func is not None and depth < 4:
                return self._passed_instance(mod, func, f, obj.id, depth)
            elif obj.id in mod.globals:
                values = mod.globals[obj.id]
        elif isinstance(obj, ast.Attribute) and isinstance(obj.value, ast.Name):
            if obj.value.id == "self" and f and f.cls:
                values = self._attr(mod, f.cls, obj.attr)
            else:  # `pl_module.head(x)` where a method of this file sets `pl_module.head`
                return self._object_instance(mod, obj.value.id, obj.attr)
        elif isinstance(obj, ast.Call):  # made in place: `Pool().pooled(x)`
            values = [obj]
        made = [_module_itself(v) for v in values]
        classes = [self._class(mod, v.func) for v in made if isinstance(v, ast.Call)]
        for v in made:  # `model = model.train()` of a parameter: what the callers pass
            if (
                isinstance(v, ast.Name)
                and f is not None
                and func is not None
                and depth < 4
                and v.id in f.params
                and not f.reaching(v.id, v)
            ):
                classes.append(self._passed_instance(mod, func, f, v.id, depth))
        if classes and all(c is not None and c == classes[0] for c in classes):
            return classes[0]
        return None

    def _object_instance(self, mod: Module, obj: str, attr: str) -> tuple[Module, str] | None:
        """The project class of `obj.attr`, when every function of the file that assigns
        `obj.attr` (on a name other than `self`) assigns an instance of that one class (also
        imported inside the function: `from pkg.heads import Head; obj.attr = Head(...)`)."""
        classes = []
        package = mod.path.endswith("__init__.py")
        if f"{obj}.{attr}" not in mod.text:
            return None  # no function of the file assigns it
        for g in mod.functions.values():
            for value in g.object_attrs.get((obj, attr), []):
                value = _module_itself(value)
                if not isinstance(value, ast.Call):
                    return None
                name = _dotted(value.func)
                local = g.imports(mod.name, package).get(name or "")
                found = self._class(mod, value.func)
                if found is None and local is not None:
                    found = self._imported_class(local)
                classes.append(found)
        if classes and all(c is not None and c == classes[0] for c in classes):
            return classes[0]
        return None

    def _imported_class(self, qualified: str) -> tuple[Module, str] | None:
        """The project class a dotted name (`pkg.heads.Head`) names."""
        modname, _, name = qualified.rpartition(".")
        other = self._module(modname) if modname else None
        target = self.lookup(other, name) if other is not None else None
        if target and target[1] in target[0].classes:
            return target
        return None

    def _passed_instance(
        self, mod: Module, func: str, f: Function, param: str, depth: int
    ) -> tuple[Module, str] | None:
        """The project class whose instances every known caller passes as `param`."""
        index = f.params.index(param) - _bound_offset(f)
        found: list[tuple[Module, str] | None] = []
        for cmod in self._neighbours(f.node.name, f, mod):
            for caller, call in cmod.calls_of(f.node.name):
                if not self._calls_this(cmod, call, f, mod, caller, depth + 1):
                    continue
                arg = argument(call, index, param)
                if arg is None:
                    continue
                cf = cmod.functions.get(caller) if caller else None
                arg = _module_itself(arg)  # `Model().cuda()`
                if isinstance(arg, ast.Call):
                    found.append(self._class(cmod, arg.func))
                else:
                    found.append(self._instance(cmod, arg, cf, caller, depth + 1))
        if found and all(c is not None and c == found[0] for c in found):
            return found[0]
        return None

    def _class(self, mod: Module, node: ast.expr) -> tuple[Module, str] | None:
        dotted = _dotted(node)
        if dotted is None:
            return None
        if "." in dotted:  # `model.Classifier` after `import model`
            qual = self.qualname(mod, node)
            return self._imported_class(qual) if qual else None
        target = self.lookup(mod, dotted)
        if target and target[1] in target[0].classes:
            return target
        return None

    def _call_object(
        self, mod: Module, fn: ast.expr, f: Function | None, func: str | None, depth: int
    ) -> Origin | None:
        """A call of an object: a project model (its forward), an `nn.Softmax()` /
        `nn.Sequential(..., nn.Sigmoid())` module."""
        cls = self._instance(mod, fn, f, func, depth)
        if cls is not None:
            return self._method(cls[0], cls[1], "forward", depth)
        values: list[ast.expr] = []
        if isinstance(fn, ast.Name):
            values = (f.assigned.get(fn.id, []) if f else []) or mod.globals.get(fn.id, [])
        elif isinstance(fn, ast.Attribute) and f and f.cls:
            values = self._attr(mod, f.cls, fn.attr)
        outs = [
            self._constructed(mod, v.func, _built_in(mod, v) or func, depth, v)
            for v in values
            if isinstance(v, ast.Call)
        ]
        return _same(outs) if outs else None

    def _constructed(
        self, mod: Module, fn: ast.expr, func: str | None, depth: int, call: ast.Call | None = None
    ) -> Origin | None:
        """The output kind of a module built by `fn(...)` (`nn.Sigmoid()`, a Sequential)."""
        qual = self.qualname(mod, fn)
        if qual is None or call is None:
            return None
        kind = _MODULE_KINDS.get(qual)
        if kind is not None:
            return Origin(
                kind,
                mod.path,
                call.lineno,
                call.col_offset + 1,
                f"the `{qual.rsplit('.', 1)[-1]}` module built in {_where(mod, func)}",
            )
        if qual in _SEQUENTIAL and call.args:
            last = call.args[-1]
            if isinstance(last, ast.Call):
                return self._constructed(mod, last.func, func, depth, last)
        return None

    def _callers(
        self, mod: Module, func: str | None, f: Function, param: str, depth: int
    ) -> Origin | None:
        """What the callers of `func` pass as `param`: the first hazardous kind found."""
        if func is None or depth > 4:
            return None
        name = f.node.name
        index = f.params.index(param) - _bound_offset(f)
        calls = (
            (cmod, caller, call)
            for cmod in self._neighbours(name, f, mod)
            for caller, call in cmod.calls_of(name)
            if self._calls_this(cmod, call, f, mod, caller)
        )
        # an override's callers include a base class's `self.name(...)` in another file
        # (asked after the others: it reads the class's bases)
        templates = (
            found
            for cls in ([f.cls] if f.cls is not None else [])
            for found in self._template_calls(mod, cls, name)
        )
        # a module's `forward` runs where its instances are called (`crit = Loss()`, then
        # `crit(p, y)`), a `__call__` where its objects are
        instances = (
            found
            for cls in ([f.cls] if f.cls is not None and name in ("forward", "__call__") else [])
            for found in self._instance_calls(mod, cls)
        )
        for cmod, caller, call in itertools.chain(calls, templates, instances):
            arg = argument(call, index, param)
            if arg is None:
                continue
            found = self._kind(cmod, arg, caller, depth + 1)
            if found is not None and found.kind:
                return _crossed(found)
        return None

    def known_calls(
        self, mod: Module, f: Function, templates: bool = False, everywhere: bool = False
    ) -> list[tuple[Module, str | None, ast.Call]]:
        """The calls of `f` (of module `mod`): (calling module, calling function's key, call).
        A method's callers are looked for in its own file (`self.m(...)`), a function's in
        the project; `templates`: also a base class's `self.m(...)` in another file;
        `everywhere`: a method's too in the project (`model.loss(out, y)` in a training
        script, on an instance it makes or is given)."""
        own = f.cls is not None and not everywhere
        modules = [mod] if own else self._neighbours(f.node.name, f, mod)
        found = [
            (cmod, caller, call)
            for cmod in modules
            for caller, call in cmod.calls_of(f.node.name)
            if self._calls_this(cmod, call, f, mod, caller)
        ]
        if templates and f.cls is not None:
            found += self._template_calls(mod, f.cls, f.node.name)
        if f.cls is not None and f.node.name == "__call__":
            found += self._instance_calls(mod, f.cls)  # `norm = Norm()`, then `norm(x, y)`
        return found

    def _template_calls(
        self, mod: Module, cls: str, name: str
    ) -> list[tuple[Module, str | None, ast.Call]]:
        """`self.name(...)` in the methods of a base class in another file (a base miner's
        `forward` calling `self.mine(...)`, which subclasses override): calls of the
        override."""
        out: list[tuple[Module, str | None, ast.Call]] = []
        for bmod, bcls in self._mro(mod, cls)[1:]:
            if bmod is mod:
                continue  # the same file's calls are found already
            for caller, call in bmod.calls_of(name):
                fn = call.func
                if (
                    caller is not None
                    and caller.startswith(f"{bcls}.")
                    and isinstance(fn, ast.Attribute)
                    and isinstance(fn.value, ast.Name)
                    and fn.value.id == "self"
                ):
                    out.append((bmod, caller, call))
        return out

    def called_without_grad(self, func: str) -> bool:
        """Whether every known call of function `func` of the file being linted (at least one)
        runs with gradients off: inside `with torch.no_grad()`, in a function decorated with
        it, or in a function whose own callers all are (`@torch.no_grad() def initialize`
        calling a k-means helper)."""
        mod = self.main
        return mod is not None and self._without_grad(mod, func, 0)

    def _without_grad(self, mod: Module, func: str, depth: int) -> bool:
        key = (mod.path, func)
        if key in self._no_grad:
            return self._no_grad[key]
        self._no_grad[key] = False  # a recursive call is not evidence
        f = mod.functions.get(func)
        found = False
        if f is not None and depth <= 3:
            calls = self.known_calls(mod, f, templates=True, everywhere=True)
            found = bool(calls) and all(
                caller is not None
                and (
                    self._call_without_grad(cmod, caller, call, depth)
                    or _result_not_differentiated(cmod.functions.get(caller), call)
                )
                for cmod, caller, call in calls
            )
        self._no_grad[key] = found
        return found

    def _call_without_grad(self, mod: Module, caller: str, call: ast.Call, depth: int) -> bool:
        f = mod.functions.get(caller)
        if f is None:
            return False
        if f.node.name == "__init__":
            return True  # what a constructor builds is a leaf: nothing differentiates through it
        if f.cls is not None and f.node.name in ("forward", "backward"):
            bases = mod.classes.get(f.cls, [])
            if any(_autograd_function_base(mod, b) for b in bases):
                return True  # a custom autograd.Function's forward runs without autograd
        if f.node.returns is not None and returns_numbers(ast.unparse(f.node.returns)):
            return True  # `-> float`: the caller hands on a Python number
        if any(self._disables_grad(mod, d) for d in f.node.decorator_list):
            return True
        for node in _walk_body(f.node):
            if isinstance(node, (ast.With, ast.AsyncWith)) and any(
                self._disables_grad(mod, item.context_expr) for item in node.items
            ):
                if any(inner is call for inner in ast.walk(node)):
                    return True
        return self._without_grad(mod, caller, depth + 1)

    def differentiated(self, func: str) -> bool:
        """Whether something differentiates function `func` of the file being linted: it, or
        a caller through up to three calls across the project, is a method of an nn.Module
        (a class with a `forward`, or one based on `torch.nn` or a `*Module`), a loss (its
        function, class or file named so), calls backward / autograd.grad itself, or tests
        whether a tensor it is given requires grad (`if xyz.requires_grad:`)."""
        mod = self.main
        return mod is not None and self._differentiated(mod, func, 0)

    def _differentiated(self, mod: Module, func: str, depth: int) -> bool:
        key = (mod.path, func)
        if key in self._differentiated_memo:
            return self._differentiated_memo[key]
        self._differentiated_memo[key] = False  # a recursive call is not evidence
        f = mod.functions.get(func)
        found = False
        if f is not None:
            found = self._trains(mod, f)
            if not found and depth < 3:
                found = any(
                    cmod.loss_lambda(call)
                    if caller is None
                    else self._differentiated(cmod, caller, depth + 1)
                    for cmod, caller, call in self.known_calls(mod, f)
                )
        self._differentiated_memo[key] = found
        return found

    def _trains(self, mod: Module, f: Function) -> bool:
        """Evidence in `f` itself that autograd differentiates it (see `differentiated`)."""
        if any(_LOSS_NAME.search(n) for n in (f.node.name, f.cls or "", Path(mod.path).stem)):
            return True
        if _TRAINING_STEP.match(f.node.name):
            return True  # Lightning's `training_step`, a trainer's `train_step`
        if f.cls is not None and self._module_class(mod, f.cls):
            return True
        return _calls_backward(f.node) or _tests_requires_grad(f.node)

    def objective(self, func: str) -> bool:
        """Whether function `func` of the file being linted computes what training minimises:
        it is a loss (its function, class or file named so), a training step, it returns
        what such a function of its file computes, or it or a caller (two calls up) calls
        backward or autograd.grad on what it computes."""
        mod = self.main
        return mod is not None and self._objective(mod, func, 0)

    def _objective(self, mod: Module, func: str, depth: int) -> bool:
        f = mod.functions.get(func)
        if f is None:
            return False
        names = (f.node.name, f.cls or "", Path(mod.path).stem)
        if any(_LOSS_NAME.search(n) for n in names) or _TRAINING_STEP.match(f.node.name):
            return True
        if _calls_backward(f.node):
            return True
        if depth < 2 and any(
            key != func and self._objective(mod, key, depth + 1) for key in _returned_calls(mod, f)
        ):
            return True  # `l = self.calc_loss(...); return l[mask].mean()`: a loss of losses
        return depth < 2 and any(
            cmod.loss_lambda(call) if caller is None else self._objective(cmod, caller, depth + 1)
            for cmod, caller, call in self.known_calls(mod, f)
        )

    def module_forward(self, func: str) -> bool:
        """Whether `func` (a summaries key) is the `forward` of an nn.Module class of the file
        being linted: what autograd differentiates whenever the module trains."""
        mod = self.main
        return mod is not None and self._module_forward(mod, func)

    def _module_forward(self, mod: Module, func: str) -> bool:
        cls, _, name = func.rpartition(".")
        return name == "forward" and bool(cls) and self._module_class(mod, cls)

    def trained(self, func: str) -> bool:
        """Whether `func` of the file being linted runs with gradients at every training
        step: it is what training minimises, a module's `forward`, or a helper every known
        caller of which (two calls up) is one of those."""
        mod = self.main
        if mod is None:
            return False
        known = self._trained_memo.get(func)
        if known is None:
            known = self._trained_memo[func] = self.objective(func) or self._trained(mod, func, 0)
        return known

    def _trained(self, mod: Module, func: str, depth: int) -> bool:
        if self._module_forward(mod, func):
            return True
        f = mod.functions.get(func)
        if f is None or depth >= 2:
            return False
        calls = self.known_calls(mod, f)
        return bool(calls) and all(
            cmod.loss_lambda(call)
            if caller is None
            else caller != func
            and (self._objective(cmod, caller, 1) or self._trained(cmod, caller, depth + 1))
            for cmod, caller, call in calls
        )

    def forward_helper(self, func: str) -> bool:
        """Whether every known caller of `func` of the file being linted (at least one) is
        the `forward` of an nn.Module class: a helper of a network's forward pass."""
        mod = self.main
        f = mod.functions.get(func) if mod is not None else None
        if mod is None or f is None:
            return False
        calls = self.known_calls(mod, f)
        return bool(calls) and all(
            caller is not None and self._module_forward(cmod, caller) for cmod, caller, _ in calls
        )

    def _module_class(self, mod: Module, cls: str) -> bool:
        """A class with a `forward` method, or based (through the project) on `torch.nn` or
        on a class whose name ends in `Module` (`LightningModule`)."""
        plain = self._plain_hierarchy(mod, cls)
        for cmod, name in self._mro(mod, cls):
            if f"{name}.forward" in cmod.functions and not plain:
                return True
            for base in cmod.classes.get(name, []):
                root = base.split(".")[0]
                imported = cmod.imports.get(root)
                full = imported + base[len(root) :] if imported else base
                if full.startswith("torch.nn."):
                    return True
                target = self.lookup(cmod, root) if base else None
                if target and target[1] in target[0].classes:
                    continue  # the project's own `Module`: its bases (in the MRO) decide
                if full.endswith("Module"):
                    return True
        return False

    def _plain_hierarchy(self, mod: Module, cls: str) -> bool:
        """The class derives from project classes only (besides `object`, `ABC`, `Generic`):
        a `forward` there is a framework's own step method (a simulation behaviour), not an
        nn.Module's."""
        own = 0
        for cmod, name in self._mro(mod, cls):
            for base in cmod.classes.get(name, []):
                if base.split("[")[0].rsplit(".", 1)[-1] in _PLAIN_BASES:
                    continue
                target = self.lookup(cmod, base.split(".")[0]) if base else None
                if not (target and target[1] in target[0].classes):
                    return False
                own += 1
        return own > 0  # a class without bases keeps its `forward` as evidence

    def _disables_grad(self, mod: Module, expr: ast.expr) -> bool:
        """The ast twin of the linted file's reading (numlint.analysis.context): `no_grad()`,
        `inference_mode()` but not `inference_mode(False)`, `set_grad_enabled(False)`."""
        qual = self.qualname(mod, expr.func if isinstance(expr, ast.Call) else expr)
        first = expr.args[0] if isinstance(expr, ast.Call) and expr.args else None
        false = isinstance(first, ast.Constant) and first.value is False
        if qual in NO_GRAD:
            return not (qual.endswith("inference_mode") and false)
        return qual == "torch.set_grad_enabled" and false

    def passed(self, func: str, param: str) -> list[tuple[Module, str | None, ast.expr]]:
        """What the known callers of function `func` of the file being linted pass as
        `param`: (module, calling function's key, argument expression)."""
        mod = self.main
        f = mod.functions.get(func) if mod is not None else None
        if f is None or param not in f.params:
            return []
        index = f.params.index(param) - _bound_offset(f)
        if index < 0:
            return []  # `self` of a method: no call passes it as an argument
        out = []
        for cmod in self._neighbours(f.node.name, f, mod):  # type: ignore[arg-type]
            for caller, call in cmod.calls_of(f.node.name):
                if self._calls_this(cmod, call, f, mod, caller):  # type: ignore[arg-type]
                    arg = argument(call, index, param)
                    if arg is not None:
                        out.append((cmod, caller, arg))
        for alias in _method_aliases(mod, f) if mod is not None else ():
            for caller, call in mod.calls_of(alias):  # `self.assign = self.sinkhorn` first
                fn = call.func
                if isinstance(fn, ast.Attribute) and _dotted(fn.value) == "self":
                    arg = argument(call, index, param)
                    if arg is not None:
                        out.append((mod, caller, arg))
        if mod is not None and f.cls is not None and f.node.name in ("forward", "__call__"):
            for cmod, caller, call in self._instance_calls(mod, f.cls):
                arg = argument(call, index, param)
                if arg is not None:
                    out.append((cmod, caller, arg))
        return out

    def _instance_calls(self, mod: Module, cls: str) -> list[tuple[Module, str | None, ast.Call]]:
        """The calls of instances of class `cls` of `mod` (its `forward`, or `__call__` of a
        class that is not a module): `self.loss(x, y)`
        after `self.loss = Loss()`, `crit(x, y)` after `crit = Loss()`, in the project's files
        that construct the class."""
        key = (mod.path, cls)
        found = self._instance_calls_of.get(key)
        if found is not None:
            return found
        found = self._instance_calls_of[key] = []
        for cmod in self._neighbours(cls):
            names: set[str] = set()
            for cf in cmod.functions.values():
                bound = [*cf.self_attrs.items(), *cf.assigned.items()]
                for name, values in bound:
                    if any(constructs(v, cls) for v in values):
                        names.add(name)
            for name in names:
                for caller, call in cmod.calls_of(name):
                    cf = cmod.functions.get(caller) if caller else None
                    made = self._instance(cmod, call.func, cf, caller, 0)
                    if made is not None and made[0].path == mod.path and made[1] == cls:
                        found.append((cmod, caller, call))
            found += self._called_when_made(cmod, mod, cls)
        return found

    def _called_when_made(
        self, cmod: Module, mod: Module, cls: str
    ) -> list[tuple[Module, str | None, ast.Call]]:
        """`Cls()(x, y)` in the functions of `cmod`: an instance of `cls` of `mod` built and
        called at once (`r = CorrCoef()(input, targets)` in a loss's forward)."""
        out: list[tuple[Module, str | None, ast.Call]] = []
        made_calls = cmod.calls_of(cls)
        target = self.lookup(cmod, cls) if made_calls else None
        if target is None or target[0].path != mod.path:
            return out  # `Cls` of this file is not what `cmod` calls by that name
        for caller, made in made_calls:
            cf = cmod.functions.get(caller) if caller else None
            if cf is None or not constructs(made, cls):
                continue
            out += [
                (cmod, caller, n)
                for n in ast.walk(cf.node)
                if isinstance(n, ast.Call) and n.func is made
            ]
        return out

    def positive_by_callers(self, func: str, param: str) -> bool:
        """Whether every known caller (at least one) of function `func` of the file being
        linted passes a positive value as `param` (`sinkhorn(torch.exp(s / eps))`)."""
        found = self.passed(func, param)
        if not found:
            return False
        for cmod, caller, arg in found:
            origin = self._kind(cmod, arg, caller, 1)
            if origin is None or origin.kind not in _POSITIVE_KINDS:
                return False
        return True

    def tested_by_callers(self, func: str, param: str) -> bool:
        """Whether every known call of function `func` of the file being linted (at least
        one) sits in the body of an `if` that tests the argument for `param` for emptiness
        (`if fg_mask.sum():`, `if mask.any():`, `if m.sum() > 0:`)."""
        found = self.passed(func, param)
        if not found:
            return False
        for cmod, caller, arg in found:
            cf = cmod.functions.get(caller) if caller else None
            if cf is None or not _under_nonempty_test(cf.node, arg):
                return False
        return True

    def bounded_by_callers(self, func: str, param: str) -> bool:
        """Whether a known caller of function `func` of the file being linted passes a
        clamped value as `param` (`f(p.clamp(eps, 1 - eps))`, `f(_sigmoid(x))` with a
        helper returning a clamp, `hm = ...clamp(...)`, `out["hm"] = _sigmoid(...)` first):
        the project bounds that argument where it is made."""
        return any(
            self._bounded_arg(cmod, caller, arg, 0)
            for cmod, caller, arg in self.passed(func, param)
        )

    def _bounded_arg(self, mod: Module, func: str | None, expr: ast.expr, depth: int) -> bool:
        if depth > 3:
            return False
        f = mod.functions.get(func) if func else None
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            return isinstance(expr.right, ast.Constant) or isinstance(expr.left, ast.Constant)
        if isinstance(expr, ast.Call):
            fn = expr.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", None)
            if name in _CLAMPS:
                return True
            target = self.lookup(mod, fn.id) if isinstance(fn, ast.Name) else None
            if target is not None and target[1] in target[0].functions:
                tmod, tname = target
                returns = tmod.functions[tname].returns
                return any(self._bounded_arg(tmod, tname, r, depth + 1) for r in returns)
            return False
        if f is None:
            return False
        if isinstance(expr, ast.Name) and expr.id in f.assigned:
            values = f.reaching(expr.id, expr)
            return any(self._bounded_arg(mod, func, v, depth + 1) for v in values)
        if isinstance(expr, ast.Subscript):  # `output["hm"] = _sigmoid(output["hm"])` first
            text = ast.dump(expr.value) + ast.dump(expr.slice)
            for node in _walk_body(f.node):
                if (
                    isinstance(node, ast.Assign)
                    and node.lineno < expr.lineno
                    and any(
                        isinstance(t, ast.Subscript)
                        and ast.dump(t.value) + ast.dump(t.slice) == text
                        for t in node.targets
                    )
                    and self._bounded_arg(mod, func, node.value, depth + 1)
                ):
                    return True
        return False

    def never_passed(self, func: str, param: str) -> bool:
        """Whether every known call of function `func` of the file being linted (at least one),
        in any file of the project, leaves out `param` (`self._initialize_biases()` for
        `cf=None`), without `*args` or `**kwargs` that could carry it."""
        mod = self.main
        f = mod.functions.get(func) if mod is not None else None
        if f is None or param not in f.params:
            return False
        index = f.params.index(param) - _bound_offset(f)
        calls = self.known_calls(mod, f, templates=True, everywhere=True)  # type: ignore[arg-type]
        for _cmod, _caller, call in calls:
            if any(isinstance(a, ast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords
            ):
                return False
            if argument(call, index, param) is not None:
                return False
        return bool(calls)

    def _calls_this(
        self,
        cmod: Module,
        call: ast.Call,
        f: Function,
        target: Module,
        caller: str | None,
        depth: int = 3,
    ) -> bool:
        """Whether `call` (in module `cmod`, function `caller`) calls `f` of `target`: the
        name itself in the same file, an import of it (or of its module, or of a package
        re-exporting it) elsewhere; a method on `self` or any object in the same file,
        elsewhere on an instance of its class (below `depth` 4 also one its caller is
        given); `super().m()` only from a subclass."""
        fn = call.func
        if f.cls is None:
            if isinstance(fn, ast.Name):
                if cmod is target:
                    return True
                imported = cmod.imports.get(fn.id)
                if _names_target(imported, f"{target.name}.{f.node.name}"):
                    return True
                found = self.lookup(cmod, fn.id) if imported else None  # a package's re-export
                return (
                    found is not None and found[0].path == target.path and found[1] == f.node.name
                )
            if isinstance(fn, ast.Attribute) and cmod is not target:
                base = _dotted(fn.value)
                root = base.split(".")[0] if base else None
                imported = cmod.imports.get(root) if root else None
                if imported is None or base is None:
                    return False
                return _names_target(imported + base[len(root) :], target.name)  # type: ignore[arg-type]
            return False
        if not isinstance(fn, ast.Attribute):
            return False
        cf = cmod.functions.get(caller) if caller else None
        if _super_call(fn.value):  # `super().forward(x)` calls a base class's method
            bases = cmod.classes.get(cf.cls, []) if cf is not None and cf.cls else []
            return any(b.rsplit(".", 1)[-1] == f.cls for b in bases)
        if cmod is target:
            return True
        # an object the caller makes, or one its callers pass (`train(model)` calling
        # `model.loss(out, y)`: one level of parameters, at `depth` 3)
        cls = self._instance(cmod, fn.value, cf, caller, depth)
        return cls is not None and cls[0].path == target.path and cls[1] == f.cls

    def _neighbours(
        self, name: str, f: Function | None = None, target: Module | None = None
    ) -> list[Module]:
        """The file being linted, then the project's files whose text calls `name(`: the
        project is the nearest directory above holding a pyproject.toml, setup.py,
        setup.cfg or .git (else the file's package), at most _PROJECT_FILES files. With the
        function `f` of module `target` (the callee that _calls_this then tests each call
        against), a file other than the target's own whose text shows that none of its
        calls can be of `f` (see _may_call) is left out unread."""
        within = target.path if f is not None and target is not None else None
        method = f is not None and f.cls is not None
        key = (name, within, method)
        found = self._neighbours_of.get(key)
        if found is not None:
            return found
        out = self._neighbours_of[key] = [self.main] if self.main is not None else []
        if self.path.startswith("<"):
            return out
        files, directories = project_files(project_root(self.path))
        self.dependencies.update(directories)  # a file added or removed changes the callers
        needle = f"{name}("
        call = _call_pattern(name)
        texts = self._texts
        for p in files:
            if p == self.path:
                continue
            if p in texts:
                text = texts[p]
            else:  # read (its status too) once per file linted
                text = texts[p] = file_text(p)
            if text is None or needle not in text:
                continue
            self.dependencies.add(p)
            if not call.search(text):
                continue  # `name(` only where it is defined: not parsed
            if within not in (None, p) and not _may_call(text, name, target.name, method):  # type: ignore[union-attr]
                continue
            mod = _load(p)
            if mod is not None and mod.calls_of(name):
                out.append(mod)
        return out


#: Functions, classes and files named for what training differentiates.
_LOSS_NAME = re.compile(r"loss|criterion|objective|penalt|regulari[sz]|likelihood|elbo", re.I)
_TRAINING_STEP = re.compile(r"^_*train(ing)?_(step|batch|iteration)$")
_FUNC_TRANSFORMS = frozenset(
    {"torch.func.grad", "torch.func.vjp", "torch.func.jacrev", "torch.func.jacfwd", "grad",
     "vjp", "jacrev", "jacfwd"}
)  # fmt: skip


@dataclass(frozen=True)
class SegmentReduce:
    """What a project helper sums per segment: its parameter (position after `self`, name),
    and the parameter naming the reduction, where the caller may pass one."""

    index: int
    name: str
    reduce_index: int | None
    reduce_name: str | None


#: Tensor methods that add values into segments of the tensor.
_SEGMENT_METHODS = frozenset(
    {"scatter_add", "scatter_add_", "index_add", "index_add_", "scatter_reduce", "scatter_reduce_"}
)


def _super_call(node: ast.expr) -> bool:
    """`super()` or `super(Cls, self)`."""
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def _bound_offset(f: Function) -> int:
    """How many leading parameters a call does not pass: `self` / `cls` of a method, none
    for a staticmethod or a plain function."""
    if f.cls is None:
        return 0
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in f.node.decorator_list)
    return 0 if static else 1


def _returned_calls(mod: Module, f: Function) -> list[str]:
    """The keys of this file's functions whose results `f` returns, directly or through the
    local names it assigns from them (`self.calc_loss(...)`, `helper(...)`)."""
    names: set[str] = set()
    todo = list(f.returns)
    calls: list[ast.Call] = []
    while todo:
        expr = todo.pop()
        for node in ast.walk(expr):
            if isinstance(node, ast.Call):
                calls.append(node)
            elif isinstance(node, ast.Name) and node.id not in names:
                names.add(node.id)
                todo.extend(f.assigned.get(node.id, ()))
                todo.extend(v for v, _ in f.unpacked.get(node.id, ()))
    keys = []
    for call in calls:
        fn = call.func
        if isinstance(fn, ast.Name):
            key = fn.id
        elif (
            isinstance(fn, ast.Attribute)
            and isinstance(fn.value, ast.Name)
            and fn.value.id == "self"
            and f.cls is not None
        ):
            key = f"{f.cls}.{fn.attr}"
        else:
            continue
        if key in mod.functions:
            keys.append(key)
    return keys


#: Methods after which a mask still marks the same entries.
_LENGTH_MASK_KEEPS = frozenset(
    {"to", "type", "float", "long", "int", "bool", "byte", "unsqueeze", "expand", "view"}
)


def _module_itself(value: ast.expr) -> ast.expr:
    """`Head(...)` of `Head(...).to(device)`, `Head(...).cuda()`: the module itself."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in _MODULE_SELF
    ):
        value = value.func.value
    return value


def constructs(value: ast.expr, cls: str) -> bool:
    """`Cls(...)` or `module.Cls(...)`, also moved (`Cls(...).cuda()`)."""
    value = _module_itself(value)
    if not isinstance(value, ast.Call):
        return False
    fn = value.func
    name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", None)
    return name == cls


def _loss_input(call: ast.Call) -> ast.expr | None:
    """A loss call's prediction: its first positional argument or `input=` / `inputs=`."""
    for k in call.keywords:
        if k.arg in ("input", "inputs"):
            return k.value
    return call.args[0] if call.args and not isinstance(call.args[0], ast.Starred) else None


def _calls_backward(func: ast.AST) -> bool:
    """`loss.backward()`, `autograd.grad(...)`, a torch.func transform or `create_graph=`."""
    for node in _walk_body(func):
        if isinstance(node, ast.Call):
            fn = node.func
            if isinstance(fn, ast.Attribute) and fn.attr == "backward":
                return True  # `loss.backward()`, `(a + b).mean().backward()`
            name = _dotted(fn) or ""
            if name.endswith("autograd.grad") or name in _FUNC_TRANSFORMS:
                return True
            if any(k.arg == "create_graph" for k in node.keywords):
                return True
    return False


def _tests_requires_grad(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """`if xyz.requires_grad:` of one of the function's own parameters, read in a test: the
    author expects to be handed tensors that need gradients."""
    params = {a.arg for a, _ in parameters(func.args)}
    for node in _walk_statements(func):
        if isinstance(node, (ast.If, ast.While, ast.Assert)):
            for n in ast.walk(node.test):
                if (
                    isinstance(n, ast.Attribute)
                    and n.attr == "requires_grad"
                    and isinstance(n.value, ast.Name)
                    and n.value.id in params
                ):
                    return True
    return False


#: How many files of a project the search for callers reads, at most.
_PROJECT_FILES = 2000
_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
_SKIP_DIRS = frozenset(
    {".git", ".hg", ".venv", "venv", "env", "build", "dist", "node_modules", "site-packages",
     "__pycache__", ".tox", ".nox", ".mypy_cache", ".ruff_cache", ".numlint_cache"}
)  # fmt: skip
_ROOTS: dict[str, str] = {}
_PROJECTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
_TEXTS: dict[tuple[str, int, int], str | None] = {}


def forget_files() -> None:
    """Forget which files each project holds (files were added or removed)."""
    _ROOTS.clear()
    _PROJECTS.clear()


def project_root(path: str) -> str:
    """The nearest directory above `path` with a project marker (four levels at most), else
    the top of its package."""
    start = os.path.dirname(path)
    found = _ROOTS.get(start)
    if found is not None:
        return found
    d = start
    root = module_name(path)[1]
    for _ in range(5):
        if any(os.path.exists(os.path.join(d, m)) for m in _MARKERS):
            root = d
            break
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    _ROOTS[start] = root
    return root


def project_files(root: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The Python files (at most _PROJECT_FILES, sorted) and directories under `root`."""
    found = _PROJECTS.get(root)
    if found is None:
        files: list[str] = []
        dirs: list[str] = []
        for here, subdirs, names in os.walk(root):
            subdirs[:] = sorted(d for d in subdirs if d not in _SKIP_DIRS and not d.startswith("."))
            dirs.append(here)
            files.extend(os.path.join(here, n) for n in sorted(names) if n.endswith(".py"))
            if len(files) >= _PROJECT_FILES:
                break
        found = _PROJECTS[root] = (tuple(files[:_PROJECT_FILES]), tuple(dirs))
    return found


def _may_call(text: str, name: str, module: str, method: bool) -> bool:
    """Whether a file's text (not the file of dotted `module`) may call function `name` of
    `module` as _calls_this sees it. A function: through an import binding `name` (spelled
    then not followed by `(` on its line, as it is in an import statement), or through an
    imported module or package whose dotted name ends in the module's last name (spelled as
    a word). A method (`method`): called as an attribute (`obj.name(`) on a receiver
    _instance can follow, which `super()` and `super(Cls, self)` are not. A text that is not
    ASCII is read as Python reads identifiers (NFKC-normalised)."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    if method:
        rest = re.sub(rf"super\([^()]*\)\.{re.escape(name)}", "", text)
        return _method_call(name).search(rest) is not None
    last = re.escape(module.rsplit(".", 1)[-1])
    if re.search(rf"{last}(?<!\w{last})(?!\w)", text):  # the name first: a fast scan
        return True
    n = re.escape(name)
    return re.search(rf"{n}(?<!\w{n})(?!\w)(?![ \t]*\()", text) is not None


@lru_cache(maxsize=256)
def _method_call(name: str) -> re.Pattern[str]:
    """Text that may call method `name` on an object: `.name` then `(` (spaces, line
    continuations or comments between either)."""
    gap = r"(?:\s|\\|#[^\n]*\n)*"
    return re.compile(rf"\.{gap}{re.escape(name)}{gap}\(")


def _call_pattern(name: str) -> re.Pattern[str]:
    """Text that may call `name`: the name, then `(` (spaces, line continuations or comments
    between), not in a `def`; it also matches in strings and comments."""
    n = re.escape(name)  # first, so that the search looks for the name as plain text
    return re.compile(rf"{n}(?<!def {n})(?<!\w{n})(?:\s|\\|#[^\n]*\n)*\(")


def file_text(path: str) -> str | None:
    """A file's text, kept by size and modification time (None: unreadable or too big)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (path, st.st_size, st.st_mtime_ns)
    if key not in _TEXTS:
        if len(_TEXTS) > 4 * _PROJECT_FILES:
            _TEXTS.clear()
        text = None
        if st.st_size <= _MAX_BYTES:
            try:
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
            except (OSError, UnicodeDecodeError):
                text = None
        _TEXTS[key] = text
    return _TEXTS[key]


def _names_target(qualified: str | None, target: str) -> bool:
    """An imported name `pkg.utils.losses.nll` names `utils.losses.nll` (or `losses.nll`, a
    module outside any package)."""
    if not qualified:
        return False
    if qualified == target or qualified.endswith("." + target):
        return True
    return "." in qualified and target.endswith("." + qualified)


def argument(call: ast.Call, index: int, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if 0 <= index < len(call.args) and not any(
        isinstance(a, ast.Starred) for a in call.args[: index + 1]
    ):
        return call.args[index]
    return None


def _under_nonempty_test(func: ast.AST, arg: ast.expr) -> bool:
    """`arg` lies in the body of an `if` of `func` whose test says its value is not empty."""
    text = re.escape(ast.unparse(arg))
    nonempty = re.compile(
        rf"^(\(?{text}\)?\.(sum|any|count_nonzero)\(\)|(torch\.)?(any|sum)\({text}\))"
        rf"(\.item\(\))?(\s*(>|!=)\s*0)?$"
    )
    for node in ast.walk(func):
        if isinstance(node, ast.If) and nonempty.match(ast.unparse(node.test)):
            if any(n is arg for stmt in node.body for n in ast.walk(stmt)):
                return True
    return False


def _nonzero_mask(index: ast.expr) -> bool:
    """An index keeping only nonzero entries or rows: `[x.sum(1) != 0]`, `[:, c > 0]`."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    for part in parts:
        if (
            isinstance(part, ast.Compare)
            and len(part.ops) == 1
            and isinstance(part.ops[0], (ast.NotEq, ast.Gt))
            and isinstance(part.comparators[0], ast.Constant)
            and part.comparators[0].value == 0
        ):
            return True
    return False


def _mean(qual: str | None, fn: ast.expr) -> bool:
    """`torch.mean(...)` or `x.mean(...)` (not a sum)."""
    return qual in ("mean", "torch.mean") or (isinstance(fn, ast.Attribute) and fn.attr == "mean")


def _built_in(mod: Module, value: ast.expr) -> str | None:
    """The method whose `self.x = ...` assigns `value` (`__init__` for a module's layers)."""
    for key, f in mod.functions.items():
        if f.cls and any(v is value for vs in f.self_attrs.values() for v in vs):
            return key
    return None


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _test(node: ast.expr) -> bool:
    """A 0/1 mask made by a test: `x > t`, `(a == 1) & (b == 0)`, `(a == c) * (b == c)`,
    `~m`, `(x > t).float()`."""
    if isinstance(node, ast.Compare):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.Mult)):
        return _test(node.left) and _test(node.right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return _test(node.operand)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in ("float", "long", "int", "double", "to") and _test(node.func.value)
    return False


def _reduces(qual: str | None, fn: ast.expr) -> bool:
    """A sum or mean: `torch.sum(x, d)`, `x.sum(d)`, `x.mean()` (`qual`: what `fn` names)."""
    return qual in _SUMS or (
        isinstance(fn, ast.Attribute) and fn.attr in ("sum", "mean") and qual is None
    )


def _reduced(qual: str | None, call: ast.Call) -> ast.expr | None:
    """What a sum or mean (`_reduces`) takes: its first argument or its receiver."""
    return call.args[0] if qual and call.args else getattr(call.func, "value", None)


def _square(node: ast.expr) -> bool:
    """`x ** 2`, `x * x`, `x.pow(2)`, `torch.square(x)`, `x.square()`."""
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Pow):
            return isinstance(node.right, ast.Constant) and node.right.value == 2
        if isinstance(node.op, ast.Mult):
            return ast.dump(node.left) == ast.dump(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "pow":
            return (
                bool(node.args)
                and isinstance(node.args[-1], ast.Constant)
                and node.args[-1].value == 2
            )
        if node.func.attr == "square":
            return True
    return False


def _value_of(f: Function | None, expr: ast.expr) -> ast.expr:
    """What a local name holds at `expr` when one assignment reaches it (`x = x ** 2;
    x = x.sum()`), else `expr`."""
    if f is None or not isinstance(expr, ast.Name) or expr.id not in f.assigned:
        return expr
    values = f.reaching(expr.id, expr)
    return values[0] if len(values) == 1 else expr


_COUNTED = frozenset({"torch.unique", "torch.unique_consecutive"})


def _counts_of(mod: Module, project: Project, value: ast.expr, index: int) -> Origin | None:
    """`_, counts = torch.unique_consecutive(x, return_counts=True)`: element `index` of the
    call is the counts, whole numbers."""
    if not isinstance(value, ast.Call):
        return None
    fn = value.func
    qual = project.qualname(mod, fn)
    if qual not in _COUNTED and not (
        isinstance(fn, ast.Attribute) and fn.attr in ("unique", "unique_consecutive")
    ):
        return None
    flags = {k.arg: k.value for k in value.keywords}

    def on(flag: str) -> int:
        v = flags.get(flag)
        return int(isinstance(v, ast.Constant) and v.value is True)

    if not on("return_counts") or index != 1 + on("return_inverse"):
        return None
    here = Origin("", mod.path, value.lineno, value.col_offset + 1, "")
    return _at(here, "whole", "the counts of `torch.unique`")


def _same(outs: list[Origin | None]) -> Origin | None:
    """The origin when every path gives one of the same kind; a norm where the other paths
    give an absolute value (a helper's 1-d case: `x.abs()` is each element's norm)."""
    if not outs or any(o is None for o in outs):
        return None
    kinds = {o.kind for o in outs if o is not None}
    if kinds == {"norm", "abs"}:
        return next(o for o in outs if o is not None and o.kind == "norm")
    return outs[0] if len(kinds) == 1 else None


def _crossed(found: Origin | None) -> Origin | None:
    if found is None or found.crossed:
        return found
    return replace(found, crossed=True)


def _difference_grade(square: ast.expr) -> str:
    """What the squared value is: a difference of a tensor with itself, of two, or neither."""
    base = square.left if isinstance(square, ast.BinOp) else getattr(square.func, "value", square)
    while isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute):
        base = base.func.value
    if not (isinstance(base, ast.BinOp) and isinstance(base.op, ast.Sub)):
        return "low"
    return (
        "high"
        if _root(base.left) is not None and _root(base.left) == _root(base.right)
        else "medium"
    )


def _root(node: ast.expr) -> str | None:
    while True:
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        else:
            return _dotted(node)


_MAXIMA = frozenset({"torch.max", "torch.maximum", "torch.fmax"})


def _detached(value: ast.expr, f: Function) -> bool:
    """`x.detach()`, or a local name every assignment of which is one."""
    if isinstance(value, ast.Name):
        found = f.assigned.get(value.id, [])
        return bool(found) and all(not isinstance(v, ast.Name) and _detached(v, f) for v in found)
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "detach"
        and not value.args
    )


def _clamp_floor(qual: str | None, fn: ast.expr, call: ast.Call) -> float | None:
    """The constant lower bound of `torch.clamp(x, min=c)`, `x.clamp(min=c)`,
    `x.clamp_min(c)` (None where there is none)."""
    low = _clamp_bound(qual, fn, call)
    if isinstance(low, ast.Constant) and isinstance(low.value, (int, float)):
        return float(low.value)
    return None


def _clamp_bound(qual: str | None, fn: ast.expr, call: ast.Call) -> ast.expr | None:
    """The lower bound a clamp call is given, as written."""
    if qual in ("torch.clamp", "torch.clip", "torch.clamp_min"):
        low = call.args[1] if len(call.args) > 1 else None
    elif qual is None and isinstance(fn, ast.Attribute) and fn.attr in (*_CLAMPS, "clamp_min"):
        low = call.args[0] if call.args else None
    else:
        return None
    return next((k.value for k in call.keywords if k.arg == "min"), low)


def _positive_setting(values: list[ast.expr], init: Function | None) -> bool:
    """The values assigned to a `self.` attribute are positive constants, or a parameter of
    `__init__` whose default is one (`self.eps = eps` with `eps=1e-8`)."""
    if not values:
        return False
    defaults = _param_defaults(init) if init is not None else {}
    for v in values:
        if isinstance(v, ast.Name):
            v = defaults.get(v.id, v)
        if not (isinstance(v, ast.Constant) and isinstance(v.value, (int, float))):
            return False
        if isinstance(v.value, bool) or v.value <= 0:
            return False
    return True


def _param_defaults(f: Function) -> dict[str, ast.expr]:
    return {a.arg: d for a, d in parameters(f.node.args) if d is not None}


def _at(here: Origin, kind: str, what: str) -> Origin:
    return Origin(kind, here.filename, here.row, here.column, what)


def _where(mod: Module, func: str | None) -> str:
    name = f"`{func}`" if func else "module code"
    return f"{name} ({os.path.basename(mod.path)})"


def related(found: Origin) -> tuple[tuple[tuple[str, int, int], str], ...]:
    """The origin as a related location of a finding."""
    return (((found.filename, found.row, found.column), f"{found.what} is computed here"),)


def function_key(ctx: object) -> str | None:
    """The summaries' key of the top-level function or method being visited."""
    import libcst as cst

    cls = None
    for node in ctx.stack:  # type: ignore[attr-defined]
        if isinstance(node, cst.ClassDef) and cls is None:
            cls = node.name.value
        elif isinstance(node, cst.FunctionDef):
            return f"{cls}.{node.name.value}" if cls else node.name.value
    return None


def tested_by_callers(ctx: object, param: str) -> bool:
    """Every known caller of the function being linted calls it only after testing the
    argument for `param` for emptiness (`if fg_mask.sum(): loss = f(fg_mask, ...)`)."""
    project = ctx.project  # type: ignore[attr-defined]
    func = function_key(ctx)
    return project is not None and func is not None and project.tested_by_callers(func, param)


def bounded_by_callers(ctx: object, param: str) -> bool:
    """A known caller of the function being linted passes a clamped value as `param`."""
    project = ctx.project  # type: ignore[attr-defined]
    func = function_key(ctx)
    return project is not None and func is not None and project.bounded_by_callers(func, param)


#: Kinds of what a caller passes whose every entry is > 0 (a probability: as positive_value
#: reads one, a sum of them is positive).
_POSITIVE_KINDS = frozenset({"positive", "softmax", "sigmoid"})


def _autograd_function_base(mod: Module, base: str) -> bool:
    """`base` (a class's base, as spelled) names torch.autograd.Function."""
    root, _, rest = base.partition(".")
    imported = mod.imports.get(root)
    full = (f"{imported}.{rest}" if rest else imported) if imported else base
    return full in ("torch.autograd.Function", "torch.autograd.function.Function")


def _method_aliases(mod: Module, f: Function) -> list[str]:
    """The attributes a class sets to one of its own methods (`self.assign = self.sinkhorn`
    makes `self.assign(q)` a call of `sinkhorn`)."""
    if f.cls is None:
        return []
    return [
        attr
        for attr, values in mod.attrs(f.cls).items()
        if attr != f.node.name
        and any(
            isinstance(v, ast.Attribute) and v.attr == f.node.name and _dotted(v.value) == "self"
            for v in values
        )
    ]


def positive_from_callers(ctx: object, param: str) -> bool:
    """Every known caller of the function being linted passes a positive value as `param`."""
    project = ctx.project  # type: ignore[attr-defined]
    func = function_key(ctx)
    return project is not None and func is not None and project.positive_by_callers(func, param)


def never_passed(ctx: object, param: str) -> bool:
    """Every known caller of the function being linted leaves out `param`."""
    project = ctx.project  # type: ignore[attr-defined]
    func = function_key(ctx)
    return project is not None and func is not None and project.never_passed(func, param)


#: What in a function's text can make a tensor that requires grad without an argument.
_OWN_GRADIENT = re.compile(r"requires_grad|Parameter|enable_grad|\bself\b|\bglobal\b|\bnonlocal\b")


def of_arguments_only(ctx: object, qualname: str | None, receiver: str | None, name: str) -> bool:
    """The function a call calls is one of this project's module-level functions or
    staticmethods (`eig.gevd(a, b)`, `Music._music(...)`, `helper(x)`) whose text makes no
    tensor that requires grad and reads no module-level object (`MODEL = Net()`, whose
    parameters would carry one): its results carry a gradient only through its arguments."""
    project = ctx.project  # type: ignore[attr-defined]
    if project is None or project.main is None:
        return False
    found = _project_function(project, qualname, receiver, name)
    if found is None:
        return False
    mod, f = found
    if f.cls is not None and not any(_dotted(d) == "staticmethod" for d in f.node.decorator_list):
        return False
    if isinstance(f.node, ast.AsyncFunctionDef):
        return False
    if f.of_arguments is None:
        made = {k for k, values in mod.globals.items() if any(_made(v) for v in values)}
        f.of_arguments = not _OWN_GRADIENT.search(
            ast.get_source_segment(mod.text, f.node) or "self"
        ) and not any(isinstance(n, ast.Name) and n.id in made for n in _walk_body(f.node))
    return f.of_arguments


def _made(value: ast.expr) -> bool:
    """A module-level value that is an object made at import (`Net()`, `torch.ones(3)`), not
    a constant or an alias of a function (`sin = torch.sin`)."""
    return isinstance(value, ast.Call)


def _project_function(
    project: Project, qualname: str | None, receiver: str | None, name: str
) -> tuple[Module, Function] | None:
    main = project.main
    if main is None:
        return None
    if receiver is not None:  # `Cls.static(...)` of a class of this file
        f = main.functions.get(f"{receiver}.{name}")
        return (main, f) if f is not None and receiver in main.classes else None
    if qualname is None:
        return None
    if "." not in qualname:
        return project.function_named(qualname)  # defined here or imported by name
    modname, _, attr = qualname.rpartition(".")
    other = project._module(modname)
    target = project.lookup(other, attr) if other is not None else None
    if target is None or target[1] not in target[0].functions:
        return None
    return target[0], target[0].functions[target[1]]


def cleared_parameter(
    ctx: object, qualname: str | None, receiver: str | None, name: str
) -> int | None:
    """The position at which a call passes the parameter that this project's function
    returns after setting some of its entries to 0 or False in place (`mask[:, 0] = 0;
    return mask`, `m.masked_fill_(special, False)`), or None."""
    project = ctx.project  # type: ignore[attr-defined]
    found = _project_function(project, qualname, receiver, name) if project else None
    if found is None:
        return None
    f = found[1]
    body = list(_walk_body(f.node))
    returned = {
        n.value.id for n in body if isinstance(n, ast.Return) and isinstance(n.value, ast.Name)
    }
    for param in f.params:
        if param in returned and any(_clears(n, param) for n in body):
            index = f.params.index(param) - _bound_offset(f)
            return index if index >= 0 else None
    return None


def returned_parameter(
    ctx: object, qualname: str | None, receiver: str | None, name: str
) -> tuple[int, str, frozenset[str]] | None:
    """The position and name of the parameter that this project's function returns as given
    or only converted (`if x.dtype != dt: x = x.type(dt)`, then `return x`; `return
    x.to(device)`), with the methods that convert it; None when it returns anything else,
    or changes the parameter in place."""
    project = ctx.project  # type: ignore[attr-defined]
    found = _project_function(project, qualname, receiver, name) if project else None
    if found is None:
        return None
    f = found[1]
    if f.passes is False:
        f.passes = _returned_parameter(f)
    return f.passes  # type: ignore[return-value]


def _returned_parameter(f: Function) -> tuple[int, str, frozenset[str]] | None:
    used: set[str] = set()

    def unconverted(value: ast.expr | None) -> str | None:
        while (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and not value.func.attr.endswith("_")
        ):
            used.add(value.func.attr)
            value = value.func.value
        return value.id if isinstance(value, ast.Name) else None

    body = list(_walk_body(f.node))
    returned = {unconverted(n.value) for n in body if isinstance(n, ast.Return)}
    if len(returned) != 1:
        return None
    param = returned.pop()
    if param is None or param not in f.params or param in ("self", "cls"):
        return None
    for n in body:
        if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                if isinstance(t, ast.Subscript) and _root(t) == param:
                    return None  # `x[x == 0] = 1`: changed in place
                if param in bound_names(t) and (
                    isinstance(n, ast.AugAssign) or unconverted(n.value) != param
                ):
                    return None
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            if n.func.attr.endswith("_") and _root(n.func.value) == param:
                return None  # `x.clamp_(min=eps)`
    index = f.params.index(param) - _bound_offset(f)
    return (index, param, frozenset(used)) if index >= 0 else None


def _clears(node: ast.AST, param: str) -> bool:
    """`param[...] = 0` (or False), `param.masked_fill_(..., 0)`, `param.index_fill_(...,
    0)`: an in-place write of 0 into some entries of `param`."""

    def zero(value: ast.expr) -> bool:
        return (
            isinstance(value, ast.Constant)
            and value.value in (0, False)
            and (value.value is not None)
        )

    if isinstance(node, ast.Assign) and zero(node.value):
        return any(
            isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == param
            for t in node.targets
        )
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
        target = node.func.value
        return (
            node.func.attr in ("masked_fill_", "index_fill_")
            and isinstance(target, ast.Name)
            and target.id == param
            and zero(node.args[-1])
        )
    return False


def rounds_parameter(ctx: object, callee: str, index: int | None, keyword: str | None) -> bool:
    """A function of this project (here or imported) reads the parameter a call passes at
    position `index` (or as `keyword`) only to round it to whole numbers (`(pace *
    durs[i]).long()`) or to take its length: the digits of its value below 1 are never used."""
    project = ctx.project  # type: ignore[attr-defined]
    found = project.function_named(callee) if project is not None else None
    if found is None:
        return False
    f = found[1]
    if keyword is not None:
        param = keyword if keyword in f.params else None
    else:
        i = (index or 0) + _bound_offset(f)
        param = f.params[i] if i < len(f.params) else None
    if param is None:
        return False
    reads = [
        n
        for n in _walk_body(f.node)
        if isinstance(n, ast.Name) and n.id == param and isinstance(n.ctx, ast.Load)
    ]
    return bool(reads) and all(_rounded_read(f.parents, n) for n in reads)


def _rounded_read(parents: dict[int, ast.AST], node: ast.AST) -> bool:
    """`node` reaches, through arithmetic, indexing and conditional expressions, a rounding
    (`.long()`, `torch.round(...)`) or `len(...)`."""
    child = node
    parent = parents.get(id(node))
    while parent is not None:
        if (
            isinstance(parent, (ast.BinOp, ast.UnaryOp))
            or (isinstance(parent, ast.Subscript) and parent.value is child)
            or (isinstance(parent, ast.IfExp) and parent.test is not child)
        ):
            child, parent = parent, parents.get(id(parent))
            continue
        if isinstance(parent, ast.Attribute) and parent.value is child:
            call = parents.get(id(parent))
            return isinstance(call, ast.Call) and call.func is parent and parent.attr in ROUNDING
        if isinstance(parent, ast.Call) and child in parent.args:
            name = (_dotted(parent.func) or "").rsplit(".", 1)[-1]
            return name in ROUNDING or name == "len"
        return False
    return False


def passed_gradient(ctx: object, param: str) -> bool:
    """Some known caller of the function being linted passes a parameter's gradient as
    `param`: `p.grad`, or a name the caller assigned from one."""
    project = ctx.project  # type: ignore[attr-defined]
    func = function_key(ctx)
    if project is None or func is None:
        return False
    for mod, caller, arg in project.passed(func, param):
        cf = mod.functions.get(caller) if caller else None
        values = [arg]
        if isinstance(arg, ast.Name) and cf is not None:
            values = cf.assigned.get(arg.id, [])
        if any(isinstance(v, ast.Attribute) and v.attr == "grad" for v in values):
            return True
    return False


def passed_names(ctx: object, param: str) -> list[str]:
    """The names the callers' arguments for `param` are written or built with: the
    argument's own name, and the function or method name of the call that made it."""
    project = ctx.project  # type: ignore[attr-defined]
    func = function_key(ctx)
    if project is None or func is None:
        return []
    names: list[str] = []
    for mod, caller, arg in project.passed(func, param):
        cf = mod.functions.get(caller) if caller else None
        values = [arg]
        if isinstance(arg, ast.Name) and cf is not None:
            names.append(arg.id)
            values = cf.assigned.get(arg.id, [])
        for v in values:
            while (
                isinstance(v, ast.Call)
                and isinstance(v.func, ast.Attribute)
                and v.func.attr
                in ("float", "unsqueeze", "bool", "long", "to", "type", "view", "reshape", "int")
            ):
                v = v.func.value
            if isinstance(v, ast.Call):
                dotted = _dotted(v.func)
                if dotted:
                    names.append(dotted.rsplit(".", 1)[-1])
            elif isinstance(v, (ast.Name, ast.Attribute)):
                names.append((_dotted(v) or "").rsplit(".", 1)[-1])
    return names


def origin_of(ctx: object, expr: object, kinds: tuple[str, ...]) -> Origin | None:
    """Where the value of a libcst expression in the code being linted gets one of `kinds`
    from another function, method, model class or file (None: not known to, or made in
    the same function, where the rules' own data flow answers)."""
    project, tree = _question(ctx, expr)
    if project is None or tree is None:
        return None
    found = project.origin(tree, function_key(ctx), kinds)
    return found if found is not None and found.crossed else None


def loss_wrapper(
    ctx: object, call: object, losses: tuple[frozenset[str], frozenset[str]]
) -> tuple[int, Origin] | None:
    """A libcst call of the code being linted to a project function, method or loss module
    that hands one of its parameters to one of `losses` (Project.loss_wrapper)."""
    project, tree = _question(ctx, call)
    if project is None or not isinstance(tree, ast.Call):
        return None
    return project.loss_wrapper(tree, function_key(ctx), losses)


def segment_reduced(ctx: object, expr: object) -> SegmentReduce | None:
    """For a libcst call of the code being linted: the parameter whose segment sum or mean
    the project function it calls returns (Project.segment_reduced)."""
    project, tree = _question(ctx, expr)
    if project is None or tree is None:
        return None
    return project.segment_reduced(tree, function_key(ctx))


def length_mask_result(ctx: object, expr: object) -> bool:
    """Whether a libcst call of the code being linted calls a project function that returns
    a comparison of positions with lengths (Project.length_mask): a padding mask."""
    project, tree = _question(ctx, expr)
    return project is not None and tree is not None and project.length_mask(tree, function_key(ctx))


def detached_result(ctx: object, expr: object) -> bool:
    """Whether a libcst call of the code being linted calls a project function or method
    whose every return is detached (Project.detached): its result carries no gradient."""
    project, tree = _question(ctx, expr)
    return project is not None and tree is not None and project.detached(tree, function_key(ctx))


def array_of(ctx: object, expr: object) -> bool:
    """Whether a libcst expression of the code being linted holds a NumPy array or a Python
    number by data flow through other functions and files (Project.array)."""
    project, tree = _question(ctx, expr)
    return project is not None and tree is not None and project.array(tree, function_key(ctx))


def _question(ctx: object, expr: object) -> tuple[Project | None, ast.expr | None]:
    """The project of the file being linted and a libcst expression of it as CPython's ast
    (None where there is no project or the text does not parse alone)."""
    project = ctx.project  # type: ignore[attr-defined]
    if project is None:
        return None, None
    try:
        code = ctx.code(expr).strip()  # type: ignore[attr-defined]
        return project, ast.parse(f"({code})", mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return project, None


def _annotated_array(annotation: ast.expr | None) -> bool:
    """`np.ndarray`, `NDArray[np.float32]`, `numpy.ndarray`."""
    if annotation is None:
        return False
    if isinstance(annotation, ast.Subscript):
        annotation = annotation.value
    dotted = _dotted(annotation) or ""
    return dotted.rsplit(".", 1)[-1] in ("ndarray", "NDArray")


# ---- the training protocol of helpers in other files ----

_CLIPS = frozenset(
    f"torch.nn.utils.{mod}{name}"
    for mod in ("", "clip_grad.")
    for name in ("clip_grad_norm_", "clip_grad_norm", "clip_grad_value_")
)
#: A `.step()` receiver named like one of these is not an optimizer.
NOT_OPTIMIZERS = (
    "sched", "warmup", "ckpt", "checkpoint", "manager", "ema", "swa", "profiler", "prof",
    "pbar", "progress", "timer", "meter", "env", "writer", "logger", "tracker", "monitor",
    "stopper", "early", "callback", "sampler",
)  # fmt: skip
#: (kind, receiver, argument) as numlint.rules.training._steps names them.
Effect = tuple[str, "str | None", "str | None"]


def effects(ctx: object, callee: str, call: object) -> list[Effect]:
    """The training-step events (backward, scaled-backward, unscale, clip, step,
    scaler-step, update, zero-grad) a call of a function imported from another file runs, in
    statement order, with its parameters replaced by the caller's arguments."""
    project = ctx.project  # type: ignore[attr-defined]
    if project is None or project.main is None:
        return []
    found = project.function_named(callee)
    if found is None or found[0] is project.main:
        return []
    mod, f = found
    args = [ctx.code(a.value) for a in call.args if a.keyword is None]  # type: ignore[attr-defined]
    binding = dict(zip(f.params, args, strict=False))
    binding.update(
        {a.keyword.value: ctx.code(a.value) for a in call.args if a.keyword is not None}  # type: ignore[attr-defined]
    )
    return [
        (kind, _rename(recv, binding), _rename(arg, binding))
        for kind, recv, arg in _events(project, mod, f, 0)
    ]


def averaged_parameters(ctx: object, callee: str) -> tuple[int, ...]:
    """The positions of the parameters a function of this project (here or imported from
    another file) takes the whole mean of (`loss.mean()`, `torch.mean(loss)`, no dim);
    empty where it is unknown."""
    project = ctx.project  # type: ignore[attr-defined]
    if project is None or project.main is None:
        return ()
    known = project.averaged.get(callee)
    if known is None:
        known = project.averaged[callee] = _averaged(project, callee)
    return known


def _averaged(project: Project, callee: str) -> tuple[int, ...]:
    found = project.function_named(callee)
    if found is None or not found[0].spells(found[1].node, "mean"):
        return ()  # no `.mean()` nor `torch.mean` in it: not walked
    f = found[1]
    averaged = set()
    for n in ast.walk(f.node):
        if not isinstance(n, ast.Call) or n.keywords:
            continue
        func = n.func
        if isinstance(func, ast.Attribute) and func.attr == "mean" and not n.args:
            arg = func.value
        elif _dotted(func) == "torch.mean" and len(n.args) == 1:
            arg = n.args[0]
        else:
            continue
        if isinstance(arg, ast.Name):
            averaged.add(arg.id)
    return tuple(i for i, p in enumerate(f.params) if p in averaged)


def _rename(text: str | None, binding: dict[str, str]) -> str | None:
    if text is None:
        return None
    root, dot, rest = text.partition(".")
    return binding.get(root, root) + dot + rest if root in binding else text


def _events(project: Project, mod: Module, f: Function, depth: int) -> list[Effect]:
    out: list[Effect] = []
    scalers = {
        _dotted(n.func.value)
        for n in ast.walk(f.node)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("scale", "unscale_")
    }
    for node in _calls_in_order(f.node):
        fn = node.func
        qual = project.qualname(mod, fn)
        if qual in _CLIPS:
            out.append(("clip", None, None))
        elif isinstance(fn, ast.Attribute):
            recv = _dotted(fn.value)
            if fn.attr == "backward":
                inner = fn.value
                if (
                    isinstance(inner, ast.Call)
                    and isinstance(inner.func, ast.Attribute)
                    and inner.func.attr == "scale"
                ):
                    out.append(("scaled-backward", _dotted(inner.func.value), None))
                else:
                    out.append(("backward", None, None))
            elif fn.attr == "unscale_" and len(node.args) == 1:
                out.append(("unscale", recv, _dotted(node.args[0])))
            elif fn.attr == "step" and recv is not None:
                if recv in scalers and len(node.args) == 1:
                    out.append(("scaler-step", recv, _dotted(node.args[0])))
                elif not node.args and not any(w in recv.lower() for w in NOT_OPTIMIZERS):
                    out.append(("step", recv, None))
            elif fn.attr == "update" and recv in scalers:
                out.append(("update", recv, None))
            elif fn.attr == "zero_grad":
                out.append(("zero-grad", recv, None))
        elif isinstance(fn, ast.Name) and depth < 2:
            target = project.lookup(mod, fn.id)
            if target is not None and target[1] in target[0].functions:
                inner_f = target[0].functions[target[1]]
                if inner_f is not f:
                    out.extend(_events(project, target[0], inner_f, depth + 1))
    return out


def _calls_in_order(func: ast.AST) -> list[ast.Call]:
    """Calls in evaluation order (arguments first), nested definitions left out."""
    out: list[ast.Call] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            visit(child)
        if isinstance(node, ast.Call):
            out.append(node)

    for stmt in func.body:  # type: ignore[attr-defined]
        visit(stmt)
    return out
