"""What a rule can ask about the code around a node: names, values, ancestors.

The engine updates one Context during its single traversal. Name resolution follows
imports (`import torch as th`, `from torch.nn import functional as F`, ...). Data flow is
flow-sensitive within a function: each assignment creates a new binding that remembers the
environment it was evaluated in, so `p = p.clamp(min=eps)` still refers to the old `p`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

import libcst as cst

from numlint.analysis.names import package_parts
from numlint.analysis.tables import CONVENTIONAL_ALIASES, HOST_MODULES, NO_GRAD, TORCH_ALIASES
from numlint.tree import exits, unparenthesized

if TYPE_CHECKING:
    from numlint.analysis.summaries import Project

T = TypeVar("T")
D = TypeVar("D", cst.FunctionDef, cst.ClassDef)

#: Names visible in a scope, each with its current binding. Never mutated once shared.
Env = Mapping[str, "Binding"]

_EMPTY: dict[str, Binding] = {}


@dataclass(frozen=True)
class Binding:
    """A name's value as assigned (None when unknown: a parameter, a loop target, ...)."""

    value: cst.BaseExpression | None
    env: Env
    #: Statements that changed the object in place afterwards (`p[p < e] = e`, `p.clamp_(...)`).
    mutations: tuple[cst.CSTNode, ...] = ()
    #: The name's bindings on the other arms of the `if` statements before this point: this
    #: one is the last assigned in statement order, which the other arms may have replaced.
    alternatives: tuple[Binding, ...] = ()


@dataclass(frozen=True)
class Value:
    """An expression together with the environment its names refer to."""

    node: cst.BaseExpression
    env: Env
    mutations: tuple[cst.CSTNode, ...] = ()


@dataclass(frozen=True)
class Callee:
    """What a call calls (shared by the rules that ask: never changed once made)."""

    #: Qualified name of an imported function or class (`torch.nn.functional.softmax`).
    qualname: str | None = None
    #: Method name when called on a value (`x.softmax(-1)` -> "softmax").
    method: str | None = None
    receiver: cst.BaseExpression | None = None
    #: For a call of a module instance (`nn.Softmax(dim=1)(x)`, `self.sm(x)`): its class.
    instance_of: str | None = None
    constructor: cst.Call | None = None


@dataclass
class Scope:
    kind: str  # "module" | "class" | "function" | "comprehension"
    node: cst.CSTNode
    env: dict[str, Binding] = field(default_factory=dict)
    #: For classes: `self.X = ...` assignments seen in its methods, and method return values.
    attrs: dict[str, Value] = field(default_factory=dict)
    #: Attributes assigned different values in different places (`self.criterion` set to
    #: one loss or another by a configuration test): what they hold depends on the run.
    varied: set[str] = field(default_factory=set)
    returns: dict[str, list[Value]] = field(default_factory=dict)
    cls: Scope | None = None  # enclosing class of a method


def _differs(ctx: Context, old: cst.CSTNode, new: cst.CSTNode) -> bool:
    """Two assignments of one attribute that hold different things (not a `None`
    placeholder, not the same code)."""
    if any(isinstance(n, cst.Name) and n.value == "None" for n in (old, new)):
        return False
    return ctx.code(old).strip() != ctx.code(new).strip()


#: Module methods that return the module itself (moved or cast).
_MOVES = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "train", "eval"})
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


class Context:
    """Per-file state shared by every rule during one traversal."""

    def __init__(
        self,
        module: cst.Module,
        path: str = "<string>",
        source: str | None = None,
        syntax: ast.Module | None = None,
    ) -> None:
        self.module = module
        self.path = path
        #: The whole file's text (the module may be a reduced copy) and its CPython ast,
        #: for summaries.
        self.source = source
        self.syntax = syntax
        #: Per-file state the rules share (the training-step tracker, float16 evidence...),
        #: owned by the file's model so that it goes away with it.
        self.shared: dict[str, Any] = {}
        self._project: Project | None | bool = False
        self.imports: dict[str, str] = {}
        self.star_imports: list[str] = []
        self._stars: dict[str, str] = {}  # see _star_name
        #: Names imported from more than one place (`if new: from a import X` / `else: from b
        #: import X`): every target.
        self.import_targets: dict[str, set[str]] = {}
        self.stack: list[cst.CSTNode] = []
        self.scopes: list[Scope] = [Scope("module", module)]
        self._ifs: list[_Arms] = []
        #: Answers that hold until the names, scopes, imports or attributes they read change
        #: (only in the bookkeeping below, which then clears them): the rules visiting a node
        #: ask the same questions of the same calls. Keyed by (question, id(node), id(env));
        #: each entry keeps its node and environment alive, so that their ids are not reused
        #: while it is there.
        self.answers: dict[tuple[str, int, int], tuple[Any, Any, Any]] = {}
        self._codes: dict[int, tuple[cst.CSTNode, str]] = {}

    # ---- traversal bookkeeping (called by the engine) ----

    def enter(self, node: cst.CSTNode) -> None:
        self.stack.append(node)
        handler = _ENTER.get(type(node))
        if handler is not None:
            handler(self, node)
            if self.answers:
                self.answers = {}

    def leave(self, node: cst.CSTNode) -> None:
        self.stack.pop()
        if self._ifs and node is self._ifs[-1].node.body:
            self._end_if_body()
            if self.answers:
                self.answers = {}
        handler = _LEAVE.get(type(node))
        if handler is not None:
            handler(self, node)
            if self.answers:
                self.answers = {}

    def end_suite(self, node: cst.BaseSuite) -> None:
        """What `leave` does for a block besides popping it (see `steps`)."""
        if self._ifs and node is self._ifs[-1].node.body:
            self._end_if_body()
            if self.answers:
                self.answers = {}

    def _enter_if(self, node: cst.If) -> None:
        self._ifs.append(_Arms(node, self.scope, self.scope.env))

    def _end_if_body(self) -> None:
        arms = self._ifs[-1]
        if arms.scope is self.scope:
            arms.after_body = self.scope.env
            self.scope.env = arms.before  # the `else` arm starts where the `if` started

    def _leave_if(self, node: cst.If) -> None:
        arms = self._ifs.pop()
        scope = arms.scope
        if scope is not self.scope or arms.after_body is None:
            return
        body, orelse, before = arms.after_body, scope.env, arms.before
        if exits(node.body):
            return  # `if ...: return`: what the `if` arm binds never reaches what follows
        if isinstance(node.orelse, cst.Else) and exits(node.orelse.body):
            scope.env = body
            return
        merged = dict(orelse)
        for name, one in body.items():
            two = orelse.get(name)
            if one is two:
                continue
            if two is None or (
                node.orelse is None
                and two is before.get(name)
                and self._replaces_tested_entries(node, name, one, two)
            ):
                merged[name] = one
            elif two is before.get(name):  # only the `if` arm rebinds: it comes later
                merged[name] = _join(one, two)
            else:
                merged[name] = _join(two, one)
        scope.env = merged

    def _replaces_tested_entries(self, node: cst.If, name: str, one: Binding, two: Binding) -> bool:
        """`if (std == 0).any(): std[std == 0] = 1`: the body only edits the entries the test
        looked for, so where it is skipped there are none and both arms hold the same."""
        if one.value is not two.value or len(one.mutations) <= len(two.mutations):
            return False
        mask = self._any_operand(node.test)
        if mask is None:
            return False
        wanted = _bare_code(mask)
        for stmt in one.mutations[len(two.mutations) :]:
            edited = None
            if isinstance(stmt, cst.Assign) and isinstance(stmt.targets[0].target, cst.Subscript):
                target = stmt.targets[0].target
                if len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index):
                    edited = target.slice[0].slice.value
            elif isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
                call = stmt.value
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value == "masked_fill_":
                    edited = call.args[0].value if call.args else None
            if edited is None or _bare_code(edited) != wanted:
                return False
        return wanted != name and re.search(rf"\b{re.escape(name)}\b", wanted) is not None

    def _any_operand(self, test: cst.BaseExpression) -> cst.BaseExpression | None:
        """The mask `m` of `m.any()`, `torch.any(m)`, `np.any(m)` or the builtin `any(m)`."""
        if not isinstance(test, cst.Call):
            return None
        func = test.func
        if isinstance(func, cst.Attribute) and func.attr.value == "any" and not test.args:
            return func.value
        if len(test.args) != 1 or test.args[0].keyword is not None:
            return None
        qual = self.qualname(func)
        builtin = isinstance(func, cst.Name) and func.value == "any" and qual is None
        return test.args[0].value if builtin or qual in ("torch.any", "numpy.any") else None

    def _enter_function(self, node: cst.FunctionDef) -> None:
        self._bind(node.name.value, None)
        outer = self.scope
        cls = outer if outer.kind == "class" else None
        self.scopes.append(Scope("function", node, cls=cls))
        for param in _params(node.params):
            self._bind(param, None)

    def _enter_lambda(self, node: cst.Lambda) -> None:
        self.scopes.append(Scope("comprehension", node, env=dict(self.scope.env)))
        for param in _params(node.params):
            self._bind(param, None)

    def _enter_class(self, node: cst.ClassDef) -> None:
        self._bind(node.name.value, None)
        self.scopes.append(Scope("class", node))

    def _enter_comprehension(self, node: cst.ListComp) -> None:
        self.scopes.append(Scope("comprehension", node, env=dict(self.scope.env)))
        comp: cst.CompFor | None = node.for_in
        while comp is not None:  # the element is visited before its `for` clauses
            for name in _target_names(comp.target):
                self._bind(name, None)
            comp = comp.inner_for_in

    def _enter_for(self, node: cst.For | cst.CompFor) -> None:
        for name in _target_names(node.target):
            self._bind(name, None)

    def _enter_with_item(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            for name in _target_names(node.asname.name):
                self._bind(name, None)

    def _pop_scope(self, node: cst.CSTNode) -> None:
        self.scopes.pop()

    def _leave_assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._assign(target.target, node.value, node)

    def _leave_ann_assign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._assign(node.target, node.value, node)

    def _leave_named_expr(self, node: cst.NamedExpr) -> None:
        self._assign(node.target, node.value, node)

    def _leave_return(self, node: cst.Return) -> None:
        if node.value is not None:
            self._record_return(node.value)

    def share_project(self, other: Context) -> None:
        """Use `other`'s summaries (a Context over the same file): built once per file (the
        object is cheap; it reads files on first use)."""
        self._project = other.project

    @property
    def project(self) -> Project | None:
        """Summaries of the functions, methods and models around this file
        (numlint.analysis.summaries), built on first use."""
        if self._project is False:
            from numlint.analysis.summaries import Project

            if self.source is not None:
                self._project = Project(self.path, self.source, self.syntax)
            else:
                self._project = Project(self.path, self.module.code)
        return self._project  # type: ignore[return-value]

    @property
    def used_project(self) -> Project | None:
        """The summaries, if any rule asked for them."""
        return self._project or None  # type: ignore[return-value]

    # ---- names ----

    @property
    def scope(self) -> Scope:
        return self.scopes[-1]

    @property
    def function(self) -> cst.FunctionDef | None:
        """The innermost enclosing function definition."""
        for scope in reversed(self.scopes):
            if scope.kind == "function":
                return scope.node  # type: ignore[return-value]
        return None

    @property
    def class_scope(self) -> Scope | None:
        """The class whose method is being visited (or the class body itself)."""
        for scope in reversed(self.scopes):
            if scope.kind == "class":
                return scope
            if scope.kind == "function" and scope.cls is not None:
                return scope.cls
        return None

    @property
    def env(self) -> Env:
        return self.scopes[-1].env  # self.scope.env, without a second property call

    def lookup(self, name: str, env: Env | None = None) -> Binding | None:
        """The binding of `name` in `env` (default: here), falling back to module scope."""
        env = self.env if env is None else env
        binding = env.get(name)
        if binding is None and env is not self.scopes[0].env:
            binding = self.scopes[0].env.get(name)
        return binding

    def top_level(self, name: str, kind: type[D]) -> D | None:
        """The top-level `def` or `class` (`kind`) of this file named `name`, where the name
        here is that definition (not a parameter or a value bound over it)."""
        binding = self.lookup(name)
        if binding is None or binding.value is not None:
            return None
        if binding is not self.scopes[0].env.get(name):
            return None  # a parameter or local of the function being visited
        for stmt in self.module.body:
            if isinstance(stmt, kind) and stmt.name.value == name:
                return stmt
        return None

    def qualname(self, expr: cst.BaseExpression, env: Env | None = None) -> str | None:
        """The imported thing an expression names: `F.softmax` -> "torch.nn.functional.softmax"."""
        parts: list[str] = []
        while isinstance(expr, cst.Attribute):
            parts.append(expr.attr.value)
            expr = expr.value
        if not isinstance(expr, cst.Name):
            return None
        root = expr.value
        binding = self.lookup(root, env)
        if binding is not None and binding.value is not None:
            return None  # a local value shadows the import
        base = self.imports.get(root)
        if base is None:
            if root == "torch" and binding is None:
                base = "torch"
            elif self.star_imports and binding is None:
                base = self._star_name(root)
            else:
                return None
        return ".".join([base, *reversed(parts)])

    def _star_name(self, root: str) -> str:
        """What a name that no import or assignment of this file binds means, where the file
        imports `*` (`from network import *`): what the first such module of the project that
        binds it makes it; when none of those modules is on disk, the conventional meaning of
        `F`, `nn`, `np`... (numlint.analysis.tables.CONVENTIONAL_ALIASES); else a name of the
        first such module."""
        known = self._stars.get(root)
        if known is None:
            project = self.project if not self.path.startswith("<") else None
            found_any, bound = (
                project.star_binding(self.star_imports, root) if project else (False, None)
            )
            if bound is None and not found_any:
                bound = CONVENTIONAL_ALIASES.get(root)
            known = self._stars[root] = bound or f"{self.star_imports[0]}.{root}"
        return known

    def spell(self, qualname: str) -> str | None:
        """How to write an importable name in this file given its imports (None: not reachable)."""
        best: tuple[int, str] | None = None
        for local, target in self.imports.items():
            if qualname == target:
                return local
            if qualname.startswith(target + "."):
                rest = qualname[len(target) :]
                if best is None or len(target) > best[0]:
                    best = (len(target), local + rest)
        if best:
            return best[1]
        root = qualname.split(".")[0]
        if root not in self.imports and self.lookup(root) is None and not self.imports:
            return qualname  # a snippet without imports: use the full name
        return None

    # ---- values ----

    def value(self, node: cst.BaseExpression) -> Value:
        """`node` with the environment at the current position."""
        return Value(node, self.env)

    def deref(self, value: Value | cst.BaseExpression, depth: int = 8) -> Value:
        """Follow names (and `self.attr`) to the expression last assigned to them."""
        if not isinstance(value, Value):
            value = self.value(value)
        mutations = value.mutations
        for _ in range(depth):
            node = value.node
            if isinstance(node, cst.Name):
                binding = self.lookup(node.value, value.env)
                if binding is None:
                    break
                mutations = mutations + binding.mutations
                if binding.value is None:  # a parameter, edited in place or not
                    value = Value(node, value.env, mutations)
                    break
                value = Value(binding.value, binding.env, mutations)
            elif (
                isinstance(node, cst.Attribute)
                and isinstance(node.value, cst.Name)
                and node.value.value == "self"
                and (cls := self.class_scope) is not None
                and node.attr.value in cls.attrs
            ):
                attr = cls.attrs[node.attr.value]
                value = Value(attr.node, attr.env, mutations + attr.mutations)
            else:
                break
        return value

    def _arms(self, value: Value) -> tuple[Binding, ...]:
        node = value.node
        if not isinstance(node, cst.Name):
            return ()
        binding = self.lookup(node.value, value.env)
        return () if binding is None else binding.alternatives

    def has_alternatives(self, value: Value) -> bool:
        """Whether `value` is a name another arm of an earlier `if` assigns differently."""
        return bool(self._arms(value))

    def alternatives(self, value: Value) -> list[Value | None]:
        """The values a name may have from the other arms of earlier `if` statements (None:
        unknown there, a parameter), each followed like `deref`; [] for other expressions."""
        return [
            None
            if alt.value is None
            else self.deref(Value(alt.value, alt.env, value.mutations + alt.mutations))
            for alt in self._arms(value)
        ]

    def on_any_arm(self, value: Value, ask: Callable[[Value], T | None]) -> T | None:
        """`ask(value)`, else the first answer `ask` gives for one of its `alternatives`."""
        found = ask(value)
        if found is None:
            for alt in self.alternatives(value):
                found = None if alt is None else ask(alt)
                if found is not None:
                    break
        return found

    def project_target(
        self, call: cst.Call, env: Env | None = None
    ) -> tuple[str | None, str | None, str] | None:
        """How the summaries look up the project function a call may call: its qualified
        name (a bare name for a function of this file), the class name it is called on
        (`Cls.static(...)`), and its own name; None for a call of another object's method."""
        callee = self.callee(call, env)
        qualname, receiver, func = callee.qualname, None, call.func
        if qualname is None and isinstance(func, cst.Name):
            qualname = func.value  # a function of this file
        elif qualname is None:
            if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
                return None
            receiver = func.value.value
        return qualname, receiver, callee.method or (qualname or "").rsplit(".", 1)[-1]

    def callee(self, call: cst.Call, env: Env | None = None) -> Callee:
        """Resolve what a call calls: an imported function, a method, or a module instance."""
        env = self.env if env is None else env
        key = ("callee", id(call), id(env))
        known = self.answers.get(key)
        if known is not None and known[0] is call and known[1] is env:
            return known[2]  # type: ignore[no-any-return]
        found = self._callee(call, env)
        self.answers[key] = (call, env, found)
        return found

    def _callee(self, call: cst.Call, env: Env) -> Callee:
        func = call.func
        qual = self.qualname(func, env)
        if qual is not None:
            return Callee(qualname=qual)
        target = self.deref(Value(func, env))
        for _ in range(4):  # `nn.ReLU().to(device)`, `nn.Softmax(-1).cuda()`: the same module
            node = target.node
            if not (
                isinstance(node, cst.Call)
                and isinstance(node.func, cst.Attribute)
                and node.func.attr.value in _MOVES
            ):
                break
            target = self.deref(Value(node.func.value, target.env))
        if isinstance(target.node, cst.Call):
            cls = self.qualname(target.node.func, target.env)
            if cls is not None:
                return Callee(instance_of=cls, constructor=target.node)
        if isinstance(func, cst.Attribute):
            return Callee(method=func.attr.value, receiver=func.value)
        return Callee()

    def in_no_grad(self) -> bool:
        """Inside `with torch.no_grad()` / `inference_mode()` / `set_grad_enabled(False)`, a
        function decorated with one, or a function the project only calls from such places: no
        gradient flows, so gradient-only hazards do not apply."""
        nested: cst.FunctionDef | None = None
        for node in reversed(self.stack):
            if isinstance(node, cst.With):
                if any(_disables_grad(self, item.item) for item in node.items):
                    return True
            elif isinstance(node, cst.FunctionDef):
                if nested is not None and _returns_name(self, node, nested.name.value):
                    return False  # a closure handed out: it runs wherever the caller runs it
                if any(_disables_grad(self, d.decorator) for d in node.decorators):
                    return True
                nested = node  # a helper defined and called inside: the enclosing context holds
            elif isinstance(node, cst.Lambda):
                return False
            elif isinstance(node, cst.ClassDef):
                break
        return self._called_without_grad()

    def _called_without_grad(self) -> bool:
        """Every caller of the function being visited runs it with gradients off."""
        from numlint.analysis.summaries import function_key

        func = function_key(self)
        project = self.project if func is not None else None
        return project is not None and project.called_without_grad(func)  # type: ignore[arg-type]

    def method_returns(self, name: str) -> list[Value]:
        """Return values of a method of the enclosing class seen so far."""
        cls = self.class_scope
        return cls.returns.get(name, []) if cls else []

    # ---- source ----

    def code(self, node: cst.CSTNode) -> str:
        """The source text of a node (generated once per node: rules ask again)."""
        known = self._codes.get(id(node))
        if known is not None and known[0] is node:
            return known[1]
        text = self.module.code_for_node(node)
        self._codes[id(node)] = (node, text)  # the node kept alive: its id is not reused
        return text

    def parameter(self, name: str) -> cst.Param | None:
        """The parameter `name` of the function being visited (None: not one of its own)."""
        func = self.function
        if func is None:
            return None
        return next((p for p in _param_nodes(func.params) if p.name.value == name), None)

    def class_tree(self, name: str) -> ast.ClassDef | None:
        """The class `name` in the file's CPython tree, the whole class where the function
        being linted may be all that was parsed of it (the first one of that name)."""
        found = self.shared.setdefault("class trees", {})
        if name not in found:
            found[name] = (
                next(
                    (
                        n
                        for n in ast.walk(self.syntax)
                        if isinstance(n, ast.ClassDef) and n.name == name
                    ),
                    None,
                )
                if self.syntax is not None
                else None
            )
        return found[name]  # type: ignore[no-any-return]

    def ancestors(self) -> Iterator[cst.CSTNode]:
        """Enclosing nodes, innermost first, excluding the node being visited."""
        return reversed(self.stack[:-1])

    @property
    def parent(self) -> cst.CSTNode | None:
        return self.stack[-2] if len(self.stack) > 1 else None

    # ---- internals ----

    def _bind(self, name: str, value: cst.BaseExpression | None, env_at: Env | None = None) -> None:
        scope = self.scope
        if scope.kind == "class":
            return
        env = dict(scope.env)
        env[name] = Binding(value, scope.env if env_at is None else env_at)
        scope.env = env

    def _assign(
        self, target: cst.BaseExpression, value: cst.BaseExpression, stmt: cst.CSTNode
    ) -> None:
        if _imports_torch(value):  # RLlib's `torch, nn = try_import_torch()`
            names = [target] if isinstance(target, cst.Name) else []
            if isinstance(target, (cst.Tuple, cst.List)):
                names = [e.value for e in target.elements]
            for name, module in zip(names, ("torch", "torch.nn"), strict=False):
                if isinstance(name, cst.Name):
                    self._bind_import(name.value, module)
            return
        if isinstance(target, cst.Name):
            self._bind(target.value, value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            values = value.elements if isinstance(value, (cst.Tuple, cst.List)) else None
            if (
                values is not None
                and len(values) == len(target.elements)
                and not any(isinstance(e, cst.StarredElement) for e in (*values, *target.elements))
            ):
                # `a, b = x, y`: each name gets its own value (evaluated before any binding)
                env = self.env
                for el, val in zip(target.elements, values, strict=True):
                    if isinstance(el.value, cst.Name):
                        self._bind(el.value.value, val.value, env)
                    elif isinstance(el.value, cst.Subscript):
                        # `x[x == 0], y[y == 0] = eps, eps`: each an in-place write of its own
                        one = cst.Assign(targets=[cst.AssignTarget(el.value)], value=val.value)
                        self._mutate(el.value.value, one)
                    else:
                        for name in _target_names(el.value):
                            self._bind(name, None)
                return
            if isinstance(value, (cst.ListComp, cst.GeneratorExp)) and not any(
                isinstance(e, cst.StarredElement) for e in target.elements
            ):  # `u, v = [f(n) for n in x.shape[-2:]]`: each name an element of it
                for i, el in enumerate(target.elements):
                    if isinstance(el.value, cst.Name):
                        index = cst.Index(cst.Integer(str(i)))
                        self._bind(
                            el.value.value, cst.Subscript(value, [cst.SubscriptElement(index)])
                        )
                    else:
                        for name in _target_names(el.value):
                            self._bind(name, None)
                return
            for name in _target_names(target):
                self._bind(name, None)
        elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
            cls = self.class_scope
            if target.value.value == "self" and cls is not None:
                name = target.attr.value
                old = cls.attrs.get(name)
                if old is not None and _differs(self, old.node, value):
                    cls.varied.add(name)
                cls.attrs[name] = Value(value, self.env)
        elif isinstance(target, cst.Attribute) and (path := _self_path(target)) is not None:
            if (cls := self.class_scope) is not None:
                cls.attrs[path] = Value(value, self.env)  # `self.conv.weight = ...`
        elif isinstance(target, cst.Subscript):
            self._mutate(target.value, stmt)

    def _aug_assign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name):
            op = _BINARY_FOR_AUG.get(type(node.operator))
            if op is None:
                self._bind(node.target.value, None)
            else:
                expr = cst.BinaryOperation(left=node.target, operator=op(), right=node.value)
                self._bind(node.target.value, expr)
        elif isinstance(node.target, cst.Subscript):
            self._mutate(node.target.value, node)

    def _record_mutation(self, stmt: cst.Expr) -> None:
        """`x.clamp_(...)`, `x.data.normal_()`, `x.mul_(a).add_(b)` and
        `torch.nn.init.orthogonal_(x)` change `x`."""
        call = stmt.value
        if not (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value.endswith("_")
            and not call.func.attr.value.startswith("_")
        ):
            return
        if (self.qualname(call.func) or "").startswith("torch.nn.init.") and call.args:
            self._mutate(call.args[0].value, stmt)
            return
        target = call.func.value
        while (  # `m.mul_(b1).add_(g, alpha=1 - b1)`: each in-place call returns `m`
            isinstance(target, cst.Call)
            and isinstance(target.func, cst.Attribute)
            and target.func.attr.value.endswith("_")
            and not target.func.attr.value.startswith("_")
        ):
            target = target.func.value
        self._mutate(target, stmt)

    def _mutate(self, target: cst.BaseExpression, stmt: cst.CSTNode) -> None:
        if isinstance(target, cst.Attribute) and target.attr.value == "data":
            target = target.value  # `w.data`: the same storage as `w`
        while isinstance(target, cst.Subscript):
            target = target.value  # `d[:, k].clamp_(0, None)`: a part of `d` changes
        if not isinstance(target, cst.Name):
            return
        scope = self.scope
        old = scope.env.get(target.value)
        if old is None:
            return
        env = dict(scope.env)
        env[target.value] = _mutated(old, stmt)
        scope.env = env

    def _record_return(self, value: cst.BaseExpression) -> None:
        for scope in reversed(self.scopes):
            if scope.kind == "function":
                if scope.cls is not None:
                    name = scope.node.name.value  # type: ignore[attr-defined]
                    scope.cls.returns.setdefault(name, []).append(Value(value, scope.env))
                return

    def _add_import(self, node: cst.Import) -> None:
        for alias in node.names:
            dotted = _dotted(alias.name)
            if alias.asname is not None:
                local = alias.asname.name
                if isinstance(local, cst.Name):
                    self._bind_import(local.value, dotted)
            else:
                root = dotted.split(".")[0]
                self._bind_import(root, root)

    def _add_import_from(self, node: cst.ImportFrom) -> None:
        if node.relative:
            module = self._relative_module(len(node.relative), node.module)
            if module is None:
                return
        elif node.module is None:
            return
        else:
            module = _dotted(node.module)
        if isinstance(node.names, cst.ImportStar):
            self.star_imports.append(module)
            return
        for alias in node.names:
            name = _dotted(alias.name)
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self._bind_import(local, self._reexported(f"{module}.{name}"))

    def _relative_module(self, level: int, name: cst.Attribute | cst.Name | None) -> str | None:
        """The module `from ..utils import x` reads, from this file's place in its package
        (None: a snippet, or above the package's root)."""
        if self.path.startswith("<"):
            return None
        from numlint.analysis.summaries import module_name

        keep = package_parts(module_name(self.path)[0], level, self.path.endswith("__init__.py"))
        if not keep:
            return None
        return ".".join([*keep, _dotted(name)] if name is not None else keep)

    def _reexported(self, target: str) -> str:
        """`from kornia.core import sin`, where the project's own package binds `sin =
        torch.sin` (or imports it from torch): the torch name; else `target`."""
        name = target.rpartition(".")[2]
        if (
            name not in TORCH_ALIASES
            or target.startswith(("torch.", *HOST_MODULES))
            or self.path.startswith("<")  # no files around it
        ):
            return target
        project = self.project
        found = project.torch_alias(target) if project is not None else None
        return found or target

    def _bind_import(self, local: str, target: str) -> None:
        old = self.imports.get(local)
        if old is not None and old != target:
            self.import_targets.setdefault(local, {old}).add(target)
        self.imports[local] = target


def _imports_torch(value: cst.BaseExpression) -> bool:
    """`try_import_torch()`: a helper that returns the torch module (and `torch.nn`)."""
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
    return name == "try_import_torch"


@dataclass
class _Arms:
    """An `if` statement being walked: the environment before it and after its body."""

    node: cst.If
    scope: Scope
    before: Env
    after_body: Env | None = None


def _join(main: Binding, other: Binding) -> Binding:
    """`main` (the later binding in statement order) with `other` as an alternative."""
    alternatives = (*main.alternatives, replace(other, alternatives=()), *other.alternatives)
    return replace(main, alternatives=alternatives[:4])


def _mutated(old: Binding, stmt: cst.CSTNode) -> Binding:
    """The binding after an in-place change, on every arm it may come from."""
    return replace(
        old,
        mutations=old.mutations + (stmt,),
        alternatives=tuple(_mutated(a, stmt) for a in old.alternatives),
    )


_ENTER = {
    cst.If: Context._enter_if,
    cst.Import: Context._add_import,
    cst.ImportFrom: Context._add_import_from,
    cst.FunctionDef: Context._enter_function,
    cst.Lambda: Context._enter_lambda,
    cst.ClassDef: Context._enter_class,
    cst.For: Context._enter_for,
    cst.CompFor: Context._enter_for,
    cst.WithItem: Context._enter_with_item,
    **{kind: Context._enter_comprehension for kind in _COMPREHENSIONS},
}
_LEAVE = {
    cst.If: Context._leave_if,
    cst.FunctionDef: Context._pop_scope,
    cst.Lambda: Context._pop_scope,
    cst.ClassDef: Context._pop_scope,
    **{kind: Context._pop_scope for kind in _COMPREHENSIONS},
    cst.Assign: Context._leave_assign,
    cst.AnnAssign: Context._leave_ann_assign,
    cst.AugAssign: Context._aug_assign,
    cst.NamedExpr: Context._leave_named_expr,
    cst.Return: Context._leave_return,
    cst.Expr: Context._record_mutation,
}


def steps(kind: type) -> tuple[Callable[..., None] | None, Callable[..., None] | None, bool]:
    """For a walker that does `Context.enter` and `Context.leave` itself (a call less for
    each node): what entering and leaving a node of type `kind` runs besides pushing and
    popping `stack` (to be followed by clearing `answers` when it is not empty), and whether
    such a node can end an `if` arm's body (then `end_suite` runs first when leaving it)."""
    return _ENTER.get(kind), _LEAVE.get(kind), issubclass(kind, cst.BaseSuite)


_BINARY_FOR_AUG = {
    cst.AddAssign: cst.Add,
    cst.SubtractAssign: cst.Subtract,
    cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide,
    cst.PowerAssign: cst.Power,
}


def _disables_grad(ctx: Context, expr: cst.BaseExpression) -> bool:
    func = expr.func if isinstance(expr, cst.Call) else expr
    qual = ctx.qualname(func)
    if qual in NO_GRAD:
        if isinstance(expr, cst.Call) and expr.args and qual.endswith("inference_mode"):
            arg = expr.args[0].value
            return not (isinstance(arg, cst.Name) and arg.value == "False")
        return True
    if qual in ("torch.set_grad_enabled", "torch.enable_grad") and isinstance(expr, cst.Call):
        arg = expr.args[0].value if expr.args else None
        return isinstance(arg, cst.Name) and arg.value == "False"
    return False


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _param_nodes(params: cst.Parameters) -> Iterator[cst.Param]:
    yield from (*params.posonly_params, *params.params, *params.kwonly_params)
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            yield star


def _params(params: cst.Parameters) -> Iterator[str]:
    for p in _param_nodes(params):
        yield p.name.value


def _target_names(target: cst.BaseExpression) -> Iterator[str]:
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            yield from _target_names(el.value)
    elif isinstance(target, cst.StarredElement):
        yield from _target_names(target.value)


def _returns_name(ctx: Context, function: cst.FunctionDef, name: str) -> bool:
    """`function` returns (or yields) the nested function `name` itself, not its result."""
    pattern = re.compile(rf"^\s*(return|yield)\b[^\n]*\b{re.escape(name)}\b(?!\s*\()", re.M)
    return bool(pattern.search(ctx.code(function)))


def _bare_code(node: cst.BaseExpression) -> str:
    """The source of `node` without its outer parentheses and spaces."""
    node = unparenthesized(node)
    return re.sub(r"\s+", "", cst.Module([]).code_for_node(node))


def _self_path(target: cst.Attribute) -> str | None:
    """`conv.weight` for `self.conv.weight`, `conv.weight.data` for `self.conv.weight.data`:
    an attribute of one of `self`'s attributes, which class attributes are kept under."""
    parts: list[str] = []
    node: cst.BaseExpression = target
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not (isinstance(node, cst.Name) and node.value == "self") or len(parts) < 2:
        return None
    return ".".join(reversed(parts))
