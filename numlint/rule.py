"""The shape of a rule: metadata, examples, the report() call, and its probe declaration."""

from __future__ import annotations

import importlib
import pkgutil
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import libcst as cst

from numlint.analysis.gradients import imported_elsewhere
from numlint.analysis.guards import in_empty_branch
from numlint.analysis.liveness import dead_code
from numlint.analysis.ops import IN_PLACE
from numlint.analysis.places import is_test_code
from numlint.diagnostic import Applicability, Confidence

if TYPE_CHECKING:
    from numlint.analysis.context import Context


def dedent(code: str) -> str:
    """Normalise an example snippet: dedent and drop the leading blank line."""
    return textwrap.dedent(code).lstrip("\n")


@dataclass(frozen=True)
class Valid:
    """A near miss the rule must stay silent on."""

    code: str
    note: str = ""

    @property
    def source(self) -> str:
        return dedent(self.code)


@dataclass(frozen=True)
class Invalid:
    """Code the rule must flag at (line, column), 1-based; `fixed` is the code after its fix."""

    code: str
    line: int
    column: int
    fixed: str | None = None
    note: str = ""
    #: The expected confidence of the finding (None: the rule's CONFIDENCE).
    confidence: Confidence | None = None
    #: Further findings of the rule the example holds, as (line, column).
    also: tuple[tuple[int, int], ...] = ()

    @property
    def source(self) -> str:
        return dedent(self.code)

    @property
    def fixed_source(self) -> str | None:
        return None if self.fixed is None else dedent(self.fixed)


class AnyOf:
    """Patterns tried one by one (`search` finds the first that matches): each can start
    with a literal, which the regex engine looks for quickly; an alternation cannot, and
    tries every position of a large file."""

    def __init__(self, *patterns: str) -> None:
        self.patterns = tuple(re.compile(p) for p in patterns)

    def search(self, text: str) -> re.Match[str] | None:
        for p in self.patterns:
            found = p.search(text)
            if found is not None:
                return found
        return None


@dataclass(frozen=True)
class Probe:
    """How to show the hazard at run time (see numlint/probe).

    `hazard` and `fix` are torch expressions over the names in `inputs`; each input is a
    torch expression building a sample tensor (e.g. "torch.tensor([[0., 90.]])"), or a
    tuple of them: one trigger case each (cases are zipped across names; a plain string
    serves every case). Expressions may use `torch.`, `F.` and `nn.`; floating inputs are
    cast to each dtype in `dtypes`. By default the hazard is confirmed when its output or an
    input gradient is non-finite; `compare` ("value", "gradient" or "both") also confirms it
    when it is silently wrong: further from the fix evaluated in float64 than the dtype's
    tolerance. `scenario` names a scripted check in numlint.probe.scenarios for hazards that
    are not one expression (training-loop order, GradScaler protocol).
    """

    hazard: str = ""
    fix: str = ""
    inputs: dict[str, str | tuple[str, ...]] = field(default_factory=dict)
    dtypes: tuple[str, ...] = ("float32", "float16", "bfloat16")
    backward: bool = True
    scenario: str = ""
    note: str = ""
    compare: str = ""


@dataclass(frozen=True)
class Replacement:
    """Replace `node` (its whole source range) with `code`."""

    node: cst.CSTNode
    code: str


@dataclass(frozen=True)
class FixSpec:
    """A fix as a rule builds it; the engine turns it into positioned edits."""

    applicability: Applicability
    message: str
    replacements: tuple[Replacement, ...] = ()


#: A place that explains a finding: a node of the same file, or (filename, row, column)
#: elsewhere; with what happens there.
Related = tuple["cst.CSTNode | tuple[str, int, int]", str]


@dataclass
class Report:
    """A finding as a rule reports it, before positions are known."""

    rule: type[Rule]
    node: cst.CSTNode
    message: str
    fix: FixSpec | None
    confidence: Confidence = "high"
    related: tuple[Related, ...] = ()


class Rule:
    """Base class: subclass it in a file under numlint/rules/<category>/.

    Define `visit_<NodeType>` / `leave_<NodeType>` methods; the engine calls them during its
    single traversal. Use `self.ctx` for name resolution and data flow and `self.report()`
    for findings. Rules never print, read files or import each other.
    """

    CODE: ClassVar[str]
    NAME: ClassVar[str]
    MESSAGE: ClassVar[str]
    #: Substrings one of which must occur in the source for the rule to run at all.
    TRIGGERS: ClassVar[tuple[str, ...]] = ()
    #: And, when set, one of these must occur too (e.g. a division as well as a norm).
    ALSO_REQUIRES: ClassVar[tuple[str, ...]] = ()
    #: How much code around a trigger the rule reads (numlint.chunks): "function" (the
    #: enclosing function; definitions are kept for their names), "class" (the methods
    #: holding a trigger, ALSO_REQUIRES looked for in the whole enclosing top-level class),
    #: "callers" (as "function", and the functions and methods calling one that holds a
    #: trigger) or "module" (the whole file).
    CHUNK: ClassVar[str] = "function"
    #: With CHUNK "class": the methods spelling one of these are kept too, where they do not
    #: hold a trigger (the class-level evidence the rule reads: a `.half()` in another method).
    EVIDENCE: ClassVar[tuple[str, ...]] = ()
    #: Run only on files that mention "torch" (TensorFlow, JAX and NumPy files stay silent).
    NEEDS_TORCH: ClassVar[bool] = True
    #: Run only on files this pattern finds something in (a value the rule needs that no
    #: single word shows: an eps literal below a threshold), besides TRIGGERS and ALSO_REQUIRES.
    FILE_REQUIRES: ClassVar[re.Pattern[str] | AnyOf | None] = None
    DEFAULT_ENABLED: ClassVar[bool] = True
    #: The confidence of a finding unless report() says otherwise (numlint.diagnostic):
    #: "high" for rules whose match is the hazard itself (an API misuse, a loss on the
    #: wrong input); rules about values that *can* be 0 grade each finding by its evidence.
    CONFIDENCE: ClassVar[Confidence] = "high"
    #: Per-rule options with their defaults; `[tool.numlint.options.NUMxxx]` overrides them.
    OPTIONS: ClassVar[dict[str, Any]] = {}
    VALID: ClassVar[Sequence[Valid]] = ()
    INVALID: ClassVar[Sequence[Invalid]] = ()
    PROBE: ClassVar[Probe | None] = None

    def __init__(self, ctx: Context, options: dict[str, Any] | None = None) -> None:
        self.ctx = ctx
        self.options = {**self.OPTIONS, **(options or {})}
        self.reports: list[Report] = []

    def report(
        self,
        node: cst.CSTNode,
        message: str | None = None,
        fix: FixSpec | None = None,
        confidence: Confidence | None = None,
        related: tuple[Related, ...] = (),
    ) -> None:
        """Record a finding at `node` (its start is the reported position). A value hazard
        (NUM1xx-NUM4xx) is not reported in a branch for an empty tensor it uses nor in code
        that cannot run (numlint.analysis.liveness), and is low
        in test code and a module's `if __name__ == "__main__":` block that does not train (a
        demo or self-check):
        tests build their inputs on purpose and their values never reach a training run. An
        API or training-loop finding (NUM5xx) is low in the `__main__` block of a module its
        package imports (a self-test run by hand)."""
        grade = confidence or self.CONFIDENCE
        if fix is not None and _in_place_call(node):
            fix = None  # `p.log_()`: an expression put in its place would change nothing
        if self.CODE[3] == "5" and grade != "low" and self._in_self_test():
            grade = "low"  # a package module's `__main__` block: run only by hand
        if self.CODE[3] in "1234":
            if in_empty_branch(self.ctx, node):
                return  # `if x.numel() == 0:` ... every value there is empty
            if dead_code(self.ctx, node):
                return  # a branch behind a constant, an option no caller passes, unused code
            if grade != "low" and (self._in_tests() or self._in_demo()):
                grade = "low"
        self.reports.append(Report(type(self), node, message or self.MESSAGE, fix, grade, related))

    def _in_demo(self) -> bool:
        """In a module's `if __name__ == "__main__":` block that does not train."""
        stack = self.ctx.stack
        if len(stack) > 1 and _main_block(stack[1]):
            return ".backward(" not in self.ctx.code(stack[1])
        return False

    def _in_self_test(self) -> bool:
        """In the `if __name__ == "__main__":` block of a module other files of its project
        import: a package module's self-test, run only when the file is executed by hand."""
        stack = self.ctx.stack
        return len(stack) > 1 and _main_block(stack[1]) and imported_elsewhere(self.ctx)

    def _in_tests(self) -> bool:
        ctx = self.ctx
        func = ctx.function
        cls = ctx.class_scope
        node = cls.node if cls is not None else None
        return is_test_code(
            ctx.path,
            func.name.value if func is not None else "",
            node.name.value if isinstance(node, cst.ClassDef) else "",
            tuple(ctx.code(b.value) for b in node.bases) if isinstance(node, cst.ClassDef) else (),
        )

    @classmethod
    def fix(
        cls, applicability: Applicability, message: str, *replacements: tuple[cst.CSTNode, str]
    ) -> FixSpec:
        """Shorthand: `self.fix("unsafe", "Use log_softmax", (node, "F.log_softmax(x)"))`."""
        return FixSpec(applicability, message, tuple(Replacement(n, c) for n, c in replacements))

    @classmethod
    def handlers(cls) -> dict[str, Callable[..., None]]:
        """The `visit_*` / `leave_*` methods this rule defines, by method name."""
        return _handlers(cls)

    @classmethod
    def docstring(cls) -> str:
        return textwrap.dedent(cls.__doc__ or "").strip()

    @classmethod
    def summary(cls) -> str:
        """The first line of the docstring."""
        return cls.docstring().splitlines()[0] if cls.__doc__ else cls.MESSAGE


@cache
def _handlers(cls: type[Rule]) -> dict[str, Callable[..., None]]:
    return {
        name: getattr(cls, name)
        for name in dir(cls)
        if name.startswith(("visit_", "leave_")) and callable(getattr(cls, name))
    }


#: A rule and its options, as a configuration enables it.
RuleSpec = tuple[type[Rule], dict[str, Any]]


@cache
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule under numlint.rules, found by importing its modules; sorted by code.

    The rules import this module: they are found by their folder, not imported by name."""
    folder = Path(__file__).with_name("rules")
    found: dict[str, type[Rule]] = {}
    for info in pkgutil.walk_packages([str(folder)], f"{__package__}.rules."):
        if info.name.rsplit(".", 1)[-1].startswith("_"):
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, Rule)
                and obj is not Rule
                and obj.__module__ == module.__name__
                and getattr(obj, "CODE", None)
            ):
                if obj.CODE in found and found[obj.CODE] is not obj:
                    raise RuntimeError(f"rule code {obj.CODE} is defined twice")
                found[obj.CODE] = obj
    return tuple(found[c] for c in sorted(found))


def rule_by_selector(selector: str) -> type[Rule] | None:
    """Look a rule up by exact code or name."""
    for rule in all_rules():
        if selector in (rule.CODE, rule.NAME):
            return rule
    return None


def _main_block(node: cst.CSTNode) -> bool:
    """A module-level `if __name__ == "__main__":`."""
    if not isinstance(node, cst.If) or not isinstance(node.test, cst.Comparison):
        return False
    test = node.test
    sides = [test.left, *(c.comparator for c in test.comparisons)]
    names = {s.value for s in sides if isinstance(s, cst.Name)}
    texts = {s.evaluated_value for s in sides if isinstance(s, cst.SimpleString)}
    return names == {"__name__"} and texts == {"__main__"}


def _in_place_call(node: cst.CSTNode) -> bool:
    """`x.log_()`, `x.sqrt_()`: a call of a tensor op that changes its receiver."""
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in IN_PLACE
    )
