"""NUM505 deprecated-amp-api."""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from numlint.requirements import TARGET_TORCH, at_least
from numlint.rule import FixSpec, Invalid, Probe, Rule, Valid
from numlint.tree import descendants, exits

#: The torch release that introduced each spelling (see the docstring's "Fix safety").
SINCE = {
    "torch.cuda.amp": (1, 6),
    "torch.cpu.amp.autocast": (1, 10),
    "torch.cpu.amp.GradScaler": (2, 3),
    "torch.autocast": (1, 10),
    "torch.amp.autocast": (1, 12),
    "torch.amp.GradScaler": (2, 3),
    "torch.amp.custom_fwd": (2, 4),
    "torch.amp.custom_bwd": (2, 4),
}
#: The release whose old spellings emit the FutureWarning.
WARNS_SINCE = "2.4"


def _version(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


@dataclass(frozen=True)
class _Api:
    new: str  # qualified name of the replacement
    device: str
    kind: str  # "autocast" | "scaler" | "decorator"
    old: str = "torch.cuda.amp"  # the deprecated spelling's key in SINCE
    older: str | None = None  # a replacement valid on older torch (same arguments)


_AUTOCAST_CUDA = _Api("torch.amp.autocast", "cuda", "autocast", older="torch.autocast")
_AUTOCAST_CPU = _Api(
    "torch.amp.autocast", "cpu", "autocast", "torch.cpu.amp.autocast", "torch.autocast"
)
_SCALER_CPU = _Api("torch.amp.GradScaler", "cpu", "scaler", "torch.cpu.amp.GradScaler")
_DEPRECATED = {
    "torch.cuda.amp.autocast": _AUTOCAST_CUDA,
    "torch.cuda.amp.autocast_mode.autocast": _AUTOCAST_CUDA,
    "torch.cpu.amp.autocast": _AUTOCAST_CPU,
    "torch.cpu.amp.autocast_mode.autocast": _AUTOCAST_CPU,
    "torch.cuda.amp.GradScaler": _Api("torch.amp.GradScaler", "cuda", "scaler"),
    "torch.cuda.amp.grad_scaler.GradScaler": _Api("torch.amp.GradScaler", "cuda", "scaler"),
    "torch.cpu.amp.GradScaler": _SCALER_CPU,
    "torch.cpu.amp.grad_scaler.GradScaler": _SCALER_CPU,
    "torch.cuda.amp.custom_fwd": _Api("torch.amp.custom_fwd", "cuda", "decorator"),
    "torch.cuda.amp.custom_bwd": _Api("torch.amp.custom_bwd", "cuda", "decorator"),
    "torch.cuda.amp.autocast_mode.custom_fwd": _Api("torch.amp.custom_fwd", "cuda", "decorator"),
    "torch.cuda.amp.autocast_mode.custom_bwd": _Api("torch.amp.custom_bwd", "cuda", "decorator"),
}
#: Positional parameters of the old autocast classes, which the new one orders differently.
_AUTOCAST_POSITIONAL = ("enabled", "dtype", "cache_enabled")
_NO_SPACE = cst.AssignEqual(
    whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
)
_COMMA = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
#: An `if` / `elif` line: its indent, its test, and a statement on the same line.
_IF_LINE = re.compile(r"^(\s*)(?:el)?if\b(.*?):(.*)$")
#: The current spellings: an arm using one makes the other arm a deliberate fallback.
_NEW_API = re.compile(r"torch\.amp\.|torch\.(GradScaler|autocast)\b")
#: Tests that select an API by torch version: the old spelling is a deliberate fallback.
_VERSION_TEST = re.compile(
    r"version|VERSION|_GREATER|_LESS|_TORCH_|TORCH_?\d|torch_?\d|_\d+_\d+\b|hasattr\(torch"
    r"|hasattr\(\w*amp\w*,\s*[\"'](autocast|GradScaler)[\"']\)"  # `amp = getattr(torch, "amp")`
    r"|getattr\(torch(\.amp)?,\s*[\"'](amp|autocast|GradScaler)[\"']"
)


class DeprecatedAmpApi(Rule):
    """Deprecated `torch.cuda.amp` / `torch.cpu.amp` API: use `torch.amp` with a device type.

    What it does:
    Flags calls of `torch.cuda.amp.autocast`, `torch.cpu.amp.autocast`,
    `torch.cuda.amp.GradScaler`, `torch.cpu.amp.GradScaler` and the decorators
    `torch.cuda.amp.custom_fwd` / `custom_bwd`, in every import spelling
    (`from torch.cuda.amp import autocast, GradScaler` then `autocast()`).

    Why is this bad?
    Since torch 2.4 they emit a FutureWarning (Python's default filter shows it once per
    call site, so every module that uses them adds its own) and are slated for removal; the
    device independent `torch.amp` API does the same thing with the device type as an
    argument.

    Fix safety:
    Safe: `torch.cuda.amp.autocast(...)` becomes `torch.amp.autocast("cuda", ...)` (positional
    `enabled` / `dtype` / `cache_enabled` are passed by keyword, since the new signature orders
    them differently), `torch.cuda.amp.GradScaler(...)` becomes
    `torch.amp.GradScaler("cuda", ...)` and `@torch.cuda.amp.custom_fwd` becomes
    `@torch.amp.custom_fwd(device_type="cuda")`; the old classes are thin wrappers that
    forward to exactly these. The fix is only offered when an import of the file reaches
    `torch.amp` (e.g. `import torch`); after `from torch.cuda.amp import autocast` alone
    there is no valid spelling, so no fix.

    The replacements are newer than the old spellings: `torch.autocast(device_type)` needs
    torch 1.10, `torch.amp.autocast` 1.12, `torch.amp.GradScaler` 2.3 and
    `torch.amp.custom_fwd` / `custom_bwd` with `device_type` 2.4 (`torch.cpu.amp.autocast`
    itself needs 1.10 and `torch.cpu.amp.GradScaler` 2.3). A fix is offered only when the
    project's lowest torch version has its replacement: below 1.12 autocast becomes
    `torch.autocast("cuda", ...)`; below 2.3 (GradScaler) or 2.4 (the decorators) the
    finding has no fix and its message names the torch version the replacement needs.

    Options:
    The top-level `target-torch-version` setting in `[tool.numlint]` (a string such as
    `"2.1"`) is the lowest torch version the code must run on. Without it, numlint reads the
    lowest version the project declares for torch: `[project] dependencies` and
    `optional-dependencies`, poetry's `[tool.poetry.dependencies]` in the pyproject.toml the
    configuration comes from (the nearest one when none has `[tool.numlint]`), and the
    `requirements*.txt` and setup.cfg `install_requires` beside it (`torch>=2.0` and
    `torch~=2.0` give 2.0, `torch==1.13.1` gives 1.13.1, the lowest when several do). No
    lower bound (`torch`, `torch<3`) means every fix is offered.

    Known limitations:
    Calls under an `if` (or conditional expression) that tests the torch version,
    `hasattr(torch, ...)`, `hasattr(amp, "autocast")` or a name bound to
    `getattr(torch.amp, "GradScaler", None)` are a deliberate fallback for old releases and
    stay silent, as
    are calls in a function the file uses only under such a test (a polyfill installed as
    `torch.autocast` where it is missing).
    A reference that is not called is flagged where it is bound for a later call: the value
    of an assignment (`ctx = torch.cuda.amp.autocast if gpu else nullcontext`), a parameter's
    default, a return value or the callable of `functools.partial`; it has no fix. Other
    references (`isinstance(s, torch.cuda.amp.GradScaler)`) construct nothing and warn
    nowhere.

    References:
    - https://pytorch.org/docs/stable/amp.html
    - [numlint hazard catalog, row 23](https://github.com/numlint/numlint/blob/main/docs/hazards.md#23)
    """

    CODE = "NUM505"
    NAME = "deprecated-amp-api"
    MESSAGE = (
        "`torch.cuda.amp` / `torch.cpu.amp` is deprecated (a FutureWarning since torch 2.4, "
        "shown once per call site); use `torch.amp` with the device type, e.g. "
        '`torch.amp.autocast("cuda")`'
    )
    CHUNK = "function"
    TRIGGERS = ("autocast", "GradScaler", "custom_fwd", "custom_bwd")

    VALID = [
        Valid(
            """
            import torch
            ctx = torch.amp.autocast if new_torch else torch.cuda.amp.autocast
            if isinstance(scaler, torch.cuda.amp.GradScaler):
                scaler.unscale_(optimizer)
            """,
            "a fallback beside the current API, and a type test that constructs nothing",
        ),
        Valid(
            """
            import torch
            try:
                scaler = torch.amp.GradScaler("cuda")
            except AttributeError:
                scaler = torch.cuda.amp.GradScaler()
            """,
            "the fallback for an old torch without torch.amp",
        ),
        Valid(
            """
            import torch
            def make_scaler(enabled):
                if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
                    try:
                        return torch.amp.GradScaler("cuda", enabled=enabled)
                    except TypeError:
                        return torch.amp.GradScaler(enabled=enabled)
                return torch.cuda.amp.GradScaler(enabled=enabled)
            """,
            "after an `if` that returns the new API from every arm of a `try`",
        ),
        Valid(
            """
            import torch
            with torch.amp.autocast("cuda", dtype=torch.bfloat16):
                y = model(x)
            scaler = torch.amp.GradScaler("cuda")
            """,
            "the current API",
        ),
        Valid(
            """
            import torch
            with torch.autocast(device_type="cuda"):
                y = model(x)
            """,
            "`torch.autocast` is not deprecated",
        ),
        Valid(
            """
            from torch.amp import autocast, GradScaler
            with autocast("cuda"):
                y = model(x)
            scaler = GradScaler()
            """,
            "imported from torch.amp",
        ),
        Valid(
            """
            import torch
            if is_torch_version(">=", "2.3"):
                scaler = torch.amp.GradScaler("cuda")
            else:
                scaler = torch.cuda.amp.GradScaler()
            ctx = torch.amp.autocast("cuda") if _TORCH_GREATER_EQUAL_2_4 else torch.cuda.amp.autocast()
            """,
            "a fallback for old torch releases",
        ),
        Valid(
            """
            import torch
            if TORCH_2_4:
                from torch.amp import GradScaler
            else:
                from torch.cuda.amp import GradScaler
            scaler = GradScaler("cuda", enabled=amp)
            def autocast(enabled):
                if TORCH_1_13:
                    return torch.amp.autocast("cuda", enabled=enabled)
                return torch.cuda.amp.autocast(enabled)
            """,
            "a name imported from either module by version, and a version flag",
        ),
        Valid(
            """
            import torch
            if use_device_api:
                scaler = torch.amp.GradScaler(device)
            else:
                scaler = torch.cuda.amp.GradScaler()
            """,
            "the other branch uses torch.amp: a deliberate fallback",
        ),
        Valid(
            """
            import torch
            from packaging import version
            newer = version.parse(torch.__version__) > version.parse("2.3.0")
            scaler = torch.GradScaler() if newer else torch.cuda.amp.GradScaler()
            """,
            "a version flag bound before the test, and `torch.GradScaler` on the other arm",
        ),
        Valid(
            """
            import torch
            class Polyfill:
                @staticmethod
                def autocast_cuda_only(device_type, enabled=True):
                    return torch.cuda.amp.autocast(enabled=enabled)
            if not hasattr(torch, "autocast"):
                torch.autocast = Polyfill.autocast_cuda_only
            """,
            "a polyfill installed only where torch lacks the new API",
        ),
        Valid(
            """
            from apex import amp
            model, optimizer = amp.initialize(model, optimizer)
            with amp.autocast():
                y = model(x)
            """,
            "not torch's amp",
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            from contextlib import suppress
            autocast = torch.cuda.amp.autocast if amp else suppress
            with torch.no_grad(), autocast():
                y = model(x)
            """,
            line=3,
            column=12,
            note="bound for a later call: no fix",
        ),
        Invalid(
            """
            import torch
            def cuda_autocast(enabled=True):
                return torch.cuda.amp.autocast(enabled=enabled)
            if not hasattr(torch, "autocast"):
                torch.autocast = cuda_autocast
            with cuda_autocast():
                y = model(x)
            """,
            line=3,
            column=12,
            fixed="""
            import torch
            def cuda_autocast(enabled=True):
                return torch.amp.autocast("cuda", enabled=enabled)
            if not hasattr(torch, "autocast"):
                torch.autocast = cuda_autocast
            with cuda_autocast():
                y = model(x)
            """,
            note="a helper also called on every torch release",
        ),
        Invalid(
            """
            import torch
            class Trainer:
                def setup(self, use_amp):
                    if use_amp:
                        self.scaler = torch.cuda.amp.GradScaler(
                            init_scale=2.0**16,
                            growth_interval=2000,
                        )
            """,
            line=5,
            column=27,
            fixed="""
            import torch
            class Trainer:
                def setup(self, use_amp):
                    if use_amp:
                        self.scaler = torch.amp.GradScaler(
                            "cuda", init_scale=2.0**16,
                            growth_interval=2000,
                        )
            """,
            note="a call over several lines in a nested block keeps its layout",
        ),
        Invalid(
            """
            import torch
            with torch.cuda.amp.autocast():
                y = model(x)
            """,
            line=2,
            column=6,
            fixed="""
            import torch
            with torch.amp.autocast("cuda"):
                y = model(x)
            """,
        ),
        Invalid(
            """
            import torch
            scaler = torch.cuda.amp.GradScaler(init_scale=2.0**10, enabled=use_amp)
            """,
            line=2,
            column=10,
            fixed="""
            import torch
            scaler = torch.amp.GradScaler("cuda", init_scale=2.0**10, enabled=use_amp)
            """,
        ),
        Invalid(
            """
            import torch
            from torch.cuda.amp import autocast, GradScaler
            scaler = GradScaler()
            with autocast(use_amp, torch.bfloat16):
                y = model(x)
            """,
            also=((4, 6),),
            line=3,
            column=10,
            fixed="""
            import torch
            from torch.cuda.amp import autocast, GradScaler
            scaler = torch.amp.GradScaler("cuda")
            with torch.amp.autocast("cuda", enabled=use_amp, dtype=torch.bfloat16):
                y = model(x)
            """,
            note="from-import with `torch` also imported; positional arguments become keywords",
        ),
        Invalid(
            """
            from torch.cuda.amp import autocast
            with autocast(enabled=True):
                y = model(x)
            """,
            line=2,
            column=6,
            note="no import reaches torch.amp: no fix",
        ),
        Invalid(
            """
            import torch
            class Fn(torch.autograd.Function):
                @staticmethod
                @torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)
                def forward(ctx, x):
                    return x
                @staticmethod
                @torch.cuda.amp.custom_bwd
                def backward(ctx, g):
                    return g
            """,
            also=((8, 6),),
            line=4,
            column=6,
            fixed="""
            import torch
            class Fn(torch.autograd.Function):
                @staticmethod
                @torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)
                def forward(ctx, x):
                    return x
                @staticmethod
                @torch.amp.custom_bwd(device_type="cuda")
                def backward(ctx, g):
                    return g
            """,
        ),
        Invalid(
            """
            import torch as th
            with th.cpu.amp.autocast(dtype=th.bfloat16):
                y = model(x)
            """,
            line=2,
            column=6,
            fixed="""
            import torch as th
            with th.amp.autocast("cpu", dtype=th.bfloat16):
                y = model(x)
            """,
        ),
    ]
    PROBE = Probe(
        scenario="deprecated-amp",
        note="constructing the old API emits a FutureWarning; the new one does not",
    )

    def visit_Call(self, node: cst.Call) -> None:
        qual = self.ctx.qualname(node.func)
        api = _DEPRECATED.get(qual or "")
        if api is None or self._version_gated() or self._imported_both_ways(node.func):
            return
        new = self._replacement(api)
        fix = self._fix_call(node, api, new) if new is not None else None
        self.report(node, self._message(qual or "", api, new), fix)

    def visit_Assign(self, node: cst.Assign) -> None:
        self._references(node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._references(node.value)

    def visit_Param(self, node: cst.Param) -> None:
        if node.default is not None:
            self._references(node.default)

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self._references(node.value)

    def _references(self, value: cst.BaseExpression) -> None:
        """The deprecated class bound as a value for a later call, also as an arm of a
        conditional expression or an operand of `and` / `or` (`amp and autocast`)."""
        if isinstance(value, cst.IfExp):
            for arm in (value.body, value.orelse):
                if not self._fallback_arm(value, arm):
                    self._references(arm)
            return
        if isinstance(value, cst.BooleanOperation):
            self._references(value.left)
            self._references(value.right)
            return
        if isinstance(value, cst.Call) and self.ctx.qualname(value.func) == "functools.partial":
            if value.args and value.args[0].keyword is None and not value.args[0].star:
                self._references(value.args[0].value)
            return
        if not isinstance(value, (cst.Name, cst.Attribute)):
            return
        qual = self.ctx.qualname(value)
        api = _DEPRECATED.get(qual or "")
        if api is None or api.kind == "decorator" or self._version_gated():
            return
        if self._imported_both_ways(value):
            return
        self.report(value, self._message(qual or "", api, self._replacement(api)))

    def visit_Decorator(self, node: cst.Decorator) -> None:
        expr = node.decorator
        if isinstance(expr, cst.Call):
            return
        qual = self.ctx.qualname(expr)
        api = _DEPRECATED.get(qual or "")
        if api is None or api.kind != "decorator" or self._version_gated():
            return
        if self._imported_both_ways(expr):
            return
        fix = None
        replacement = self._replacement(api)
        new = self.ctx.spell(replacement) if replacement is not None else None
        if new is not None:
            code = f'{new}(device_type="{api.device}")'
            fix = self.fix("safe", f"Replace with `{code}`", (expr, code))
        self.report(expr, self._message(qual or "", api, replacement), fix)

    def _target(self, api: _Api) -> str | None:
        """The lowest torch version the code runs on (None: any): the configured or
        declared one, raised to what the old spelling itself needs."""
        target = self.options.get(TARGET_TORCH)
        if target is not None and not at_least(target, SINCE[api.old]):
            return _version(SINCE[api.old])
        return target

    def _replacement(self, api: _Api) -> str | None:
        """The newest spelling the project's torch has: `api.new`, else `api.older`."""
        target = self._target(api)
        for qual in (api.new, api.older):
            if qual is not None and at_least(target, SINCE[qual]):
                return qual
        return None

    def _version_gated(self) -> bool:
        """Inside an `if` / conditional expression that tests the torch version or API, or
        whose other branch uses `torch.amp`, or in the `except` fallback of a `try` that
        uses the new API (old torch only)."""
        inner: cst.CSTNode | None = None
        for node in self.ctx.ancestors():
            if isinstance(node, cst.ExceptHandler):
                return True
            if isinstance(node, (cst.If, cst.IfExp)) and self._fallback_arm(node, inner):
                return True
            if isinstance(node, (cst.IndentedBlock, cst.Module)) and inner in node.body:
                earlier = node.body[: node.body.index(inner)]
                if any(self._fallback_before(stmt) for stmt in earlier):
                    return True
            inner = node
        return self._installed_as_polyfill()

    def _fallback_arm(self, node: cst.If | cst.IfExp, arm: cst.CSTNode | None) -> bool:
        """`arm` of an `if` / conditional expression that tests the torch version or API,
        or whose other arm uses `torch.amp`: the old spelling there is a deliberate
        fallback."""
        if self._version_test(node.test):
            return True
        other = node.orelse if arm is node.body else node.body
        return other is not None and bool(_NEW_API.search(self.ctx.code(other)))

    def _installed_as_polyfill(self) -> bool:
        """A function used only under a version test: `if not hasattr(torch, "autocast"):
        torch.autocast = Polyfill.autocast_cuda_only` (it runs on old torch only)."""
        func = self.ctx.function
        if func is None:
            return False
        text, gated_text = self._module_texts()
        if not gated_text:
            return False
        name = re.compile(rf"\b{re.escape(func.name.value)}\b")
        uses = len(name.findall(text)) - 1  # less the `def` itself
        gated = len(name.findall(gated_text))
        return uses > 0 and gated >= uses

    def _module_texts(self) -> tuple[str, str]:
        """The module's code and the lines under its version tests (once per file, by text:
        walking every node of a large file for a rare case costs more than the rule)."""
        found = self.ctx.shared.get("version_gated_text")
        if found is None:
            text = self.ctx.source if self.ctx.source is not None else self.ctx.module.code
            gated: list[str] = []
            if _VERSION_TEST.search(text):
                lines = text.splitlines()
                for i, line in enumerate(lines):
                    head = _IF_LINE.match(line)
                    if head is None or not _VERSION_TEST.search(head.group(2)):
                        continue
                    gated.append(head.group(3))  # `if old: torch.autocast = polyfill`
                    depth = len(head.group(1))
                    for inner in lines[i + 1 :]:
                        if inner.strip() and len(inner) - len(inner.lstrip()) <= depth:
                            break
                        gated.append(inner)
            found = (text, "\n".join(gated))
            self.ctx.shared["version_gated_text"] = found
        return found

    def _version_test(self, test: cst.BaseExpression) -> bool:
        """A test of the torch version or API, also through a flag bound to one
        (`newer = version.parse(torch.__version__) > ...`)."""
        if _VERSION_TEST.search(self.ctx.code(test)):
            return True
        for flag in descendants(test):  # `newer`, `scaler_cls is not None`
            if isinstance(flag, cst.Name):
                bound = self.ctx.deref(self.ctx.value(flag)).node
                if bound is not flag and _VERSION_TEST.search(self.ctx.code(bound)):
                    return True
        return False

    def _fallback_before(self, stmt: cst.CSTNode) -> bool:
        """`if new_torch: return torch.amp...`: what follows is the old-torch fallback."""
        if not isinstance(stmt, cst.If) or stmt.orelse is not None or not exits(stmt.body):
            return False
        return bool(_VERSION_TEST.search(self.ctx.code(stmt.test))) or (
            "torch.amp." in self.ctx.code(stmt.body)
        )

    def _imported_both_ways(self, func: cst.BaseExpression) -> bool:
        """`GradScaler` imported from `torch.amp` on one branch and `torch.cuda.amp` on
        another (a version switch): the name is the current API where it exists."""
        while isinstance(func, cst.Attribute):
            func = func.value
        if not isinstance(func, cst.Name):
            return False
        targets = self.ctx.import_targets.get(func.value, set())
        return any(t not in _DEPRECATED for t in targets)  # `torch.GradScaler`, `torch.amp.*`

    def _message(self, qual: str, api: _Api, replacement: str | None) -> str:
        """What is deprecated and what replaces it; when the project's torch is older than
        the replacement, which version it needs."""

        def spelled(name: str) -> str:
            if api.kind == "decorator":
                return f'{name}(device_type="{api.device}")'
            return f'{name}("{api.device}", ...)'

        old = qual.replace(".autocast_mode", "").replace(".grad_scaler", "")
        head = (
            f"`{old}` is deprecated (a FutureWarning since torch {WARNS_SINCE}, "
            "shown once per call site)"
        )
        if replacement == api.new:
            return f"{head}; use `{spelled(api.new)}`"
        target = self._target(api)
        needs = _version(SINCE[api.new])
        if replacement is not None:
            return (
                f"{head}; use `{spelled(replacement)}` (`{api.new}` needs torch {needs}, "
                f"the project supports torch {target})"
            )
        also = f" (`{api.older}` from {_version(SINCE[api.older])})" if api.older else ""
        return (
            f"{head}; `{spelled(api.new)}` replaces it from torch {needs} on{also}, but the "
            f"project supports torch {target} (see `{TARGET_TORCH}`), so no fix is offered"
        )

    def _fix_call(self, node: cst.Call, api: _Api, replacement: str) -> FixSpec | None:
        """Edits of the callee's name and of the arguments only: the rest of the call,
        line breaks and indentation included, stays as written."""
        ctx = self.ctx
        new = ctx.spell(replacement)
        if new is None or any(a.star for a in node.args):
            return None
        args = list(node.args)
        device = f'"{api.device}"'
        message = f"Use `{new}` with the device type"
        if not args:
            inner = f"device_type={device}" if api.kind == "decorator" else device
            return self.fix("safe", message, (node, f"{new}({inner})"))
        edits: list[tuple[cst.CSTNode, str]] = [(node.func, new)]
        if api.kind == "decorator":
            split = sum(1 for a in args if a.keyword is None)
            extra = f"device_type={device}"
            if split < len(args):
                kw = args[split].keyword
                assert kw is not None
                edits.append((kw, f"{extra}, {kw.value}"))
            else:
                last = args[-1].value
                edits.append((last, f"{ctx.code(last)}, {extra}"))
            return self.fix("safe", message, *edits)
        names: dict[int, str] = {}
        if api.kind == "autocast":
            positional = 0
            for i, arg in enumerate(args):
                if arg.keyword is None:
                    if positional >= len(_AUTOCAST_POSITIONAL):
                        return None
                    names[i] = _AUTOCAST_POSITIONAL[positional]
                    positional += 1
        for i, arg in enumerate(args):
            lead = f"{device}, " if i == 0 else ""
            if i in names:
                edits.append((arg.value, f"{lead}{names[i]}={ctx.code(arg.value)}"))
            elif i == 0 and arg.keyword is not None:
                edits.append((arg.keyword, f"{lead}{arg.keyword.value}"))
            elif i == 0:
                edits.append((arg.value, f"{lead}{ctx.code(arg.value)}"))
        return self.fix("safe", message, *edits)
