"""Does the project train in float16? Mixed-precision evidence from any file of the project.

The NUM4xx rules first follow a value's dtype in its function and look for float16
conversions in its class, function or module (numlint.analysis.dtypes). Real projects
usually switch float16 on elsewhere, in a training script: `project_half` says whether any
file of the project (numlint.analysis.summaries' project: the files under the nearest
pyproject.toml, setup.py, setup.cfg or .git) does, and where. Evidence, read from the
files' code (not their strings or comments):

- "autocast" (mixed precision: float32 weights, float16 matmul and convolution outputs):
  creating a `GradScaler` (`torch.amp`, `torch.cuda.amp`, `torch.GradScaler`, sharded);
  `autocast(...)` unless it names bfloat16, the CPU or `enabled=False` (a `dtype=` that is a
  variable counts only where the file names float16); `precision=16` / `"16-mixed"`
  (Lightning); `mixed_precision="fp16"` (accelerate); `fp16=True` (TrainingArguments) or
  `{"fp16": {"enabled": True}}` (DeepSpeed); `amp.initialize(` (apex); an `--fp16` /
  `--amp` / `--use_amp` command-line option.
- "half" (float16 weights): a model converted in place (`model.half()`,
  `self.net.to(torch.float16)` as a statement) or when built (`Net().cuda().half()`,
  `AutoModel.from_pretrained(name).half()`), `precision="16-true"` (Lightning),
  `torch.set_default_dtype(torch.float16)`.

bfloat16 settings are not evidence. Each file is scanned once per version (size and
modification time), and only when a rule has a candidate whose dtype is otherwise unknown.
"""

from __future__ import annotations

import ast
import os
import re
from bisect import bisect_left
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from numlint.analysis.context import Context, Value
from numlint.analysis.dtypes import dtype_branch
from numlint.analysis.semantics import keyword
from numlint.diagnostic import Confidence
from numlint.positions import rows_spelling, unit_start

#: Evidence kinds: mixed precision (float32 weights) and float16 weights.
AUTOCAST = "autocast"
HALF = "half"


@dataclass(frozen=True)
class ProjectHalf:
    """Where a project switches float16 on."""

    path: str
    line: int
    #: What was found, as written in a message: "GradScaler", "`model.half()`".
    what: str
    kind: str

    def describe(self, root: str) -> str:
        """`the project trains with float16 autocast (GradScaler in train.py:12)`."""
        where = f"{os.path.relpath(self.path, root)}:{self.line}"
        if self.kind == HALF:
            return f"the project converts a model to float16 ({self.what} in {where})"
        if self.what == "autocast":  # not necessarily training: an inference block too
            return f"the project runs code under float16 autocast (autocast in {where})"
        return f"the project trains with float16 autocast ({self.what} in {where})"


#: What a file with evidence holds as text (a cheap filter before parsing it): pieces of
#: one pattern each, with the substrings one of which every match contains. The substrings
#: are tested first, and each pattern searched alone: one search with all the alternatives
#: tries each of them at every position of the text, several times slower. A pattern starts
#: with its word, the word boundary tested behind it (`autocast(?<!\wautocast)` is
#: `\bautocast`): the search then skips to each occurrence of the word, twenty times faster.
_QUICK: tuple[tuple[tuple[str, ...], re.Pattern[str] | None], ...] = (
    (("GradScaler",), None),
    (("autocast",), re.compile(r"autocast(?<!\wautocast)\s*\(")),
    (("set_default_dtype",), None),
    (("amp.initialize",), None),
    (("--fp16", "--amp", "--use"), re.compile(r"--(?:fp16|amp|use[-_]amp)\b")),
    (("precision",), re.compile(r"precision[\"']?\s*[=:]\s*[\"']?(?:16|fp16)")),
    (("fp16",), re.compile(r"fp16(?<!\wfp16)[\"']?\s*[=:]")),
    ((".half()",), None),
    (("float16", "torch.half"), re.compile(r"\.to\([^\n]*(?:float16|torch\.half)")),
)


def may_hold_evidence(text: str) -> bool:
    """Whether `text` spells one of the settings scan_text looks for (in a string or a
    comment too)."""
    for needles, pattern in _QUICK:
        if any(n in text for n in needles) and (pattern is None or pattern.search(text)):
            return True
    return False


_OPTIONS = frozenset({"--fp16", "--amp", "--use_amp", "--use-amp"})
_MODEL_BUILDERS = ("from_pretrained", "from_config", "load_from_checkpoint")


def scan_text(path: str, text: str) -> tuple[ProjectHalf, ...]:
    """Every float16 setting in one file's code (strings and comments aside), the first of
    each kind of finding."""
    if not may_hold_evidence(text):
        return ()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    names_float16 = "torch.float16" in text or "torch.half" in text
    #: The values of expression statements (the walk goes breadth first: a statement is met
    #: before the call it holds).
    statements: set[int] = set()
    found: dict[str, ProjectHalf] = {}
    for node in _breadth_first(tree, sorted(rows_spelling(text, _SPELLED))):
        what: tuple[str, str] | None = None
        if isinstance(node, ast.Expr):
            statements.add(id(node.value))
        elif isinstance(node, ast.Call):
            what = _call_evidence(node, names_float16, id(node) in statements)
        elif isinstance(node, ast.Dict):
            what = _dict_evidence(node)
        if what is not None and what[0] not in found:
            found[what[0]] = ProjectHalf(path, getattr(node, "lineno", 1), what[0], what[1])
    return tuple(sorted(found.values(), key=lambda e: e.line))


#: What the lines of every piece of evidence _call_evidence and _dict_evidence find spell.
_SPELLED = ("GradScaler", "autocast", "set_default_dtype", "initialize", "--fp16", "--amp",
            "--use", "precision", "fp16", "half", "float16")  # fmt: skip


def _breadth_first(tree: ast.AST, lines: list[int]) -> Iterator[ast.AST]:
    """ast.walk's nodes in its order, the children read without its generators, leaving out
    the statements whose lines (a definition's decorators too) hold none of `lines`."""
    todo = deque([tree])
    node_type, statement = ast.AST, ast.stmt

    def wanted(item: ast.AST) -> bool:
        if not isinstance(item, statement):
            return isinstance(item, node_type)
        i = bisect_left(lines, unit_start(item))
        return i < len(lines) and lines[i] <= (item.end_lineno or item.lineno)

    while todo:
        node = todo.popleft()
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                todo.extend(item for item in value if wanted(item))
            elif isinstance(value, node_type) and wanted(value):
                todo.append(value)
        yield node


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _is(node: ast.expr | None, *values: object) -> bool:
    return isinstance(node, ast.Constant) and any(
        type(node.value) is type(v) and node.value == v for v in values
    )


def _half_dtype(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr in ("float16", "half")


def _call_evidence(call: ast.Call, names_float16: bool, statement: bool) -> tuple[str, str] | None:
    name = _name(call.func)
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    if name.endswith("GradScaler"):
        return "GradScaler", AUTOCAST
    if name == "autocast":
        return ("autocast", AUTOCAST) if _float16_autocast(call, kw, names_float16) else None
    if name == "set_default_dtype" and call.args and _half_dtype(call.args[0]):
        return "set_default_dtype", HALF
    if name == "initialize" and _name(getattr(call.func, "value", call.func)) == "amp":
        return "amp.initialize", AUTOCAST
    if name == "add_argument" and any(_is(a, *_OPTIONS) for a in call.args):
        option = next(a.value for a in call.args if _is(a, *_OPTIONS))  # type: ignore[attr-defined]
        return f"the {option} option", AUTOCAST
    if _is(kw.get("precision"), 16, "16", "16-mixed"):
        return "precision=16", AUTOCAST
    if _is(kw.get("precision"), "16-true"):
        return 'precision="16-true"', HALF
    if _is(kw.get("mixed_precision"), "fp16"):
        return 'mixed_precision="fp16"', AUTOCAST
    if _is(kw.get("fp16"), True):
        return "fp16=True", AUTOCAST
    converts = (name == "half" and not call.args and not call.keywords) or (
        name == "to" and any(_half_dtype(a) for a in [*call.args, *kw.values()])
    )
    if converts and isinstance(call.func, ast.Attribute) and _a_model(call.func.value, statement):
        return f"`{ast.unparse(call)}`", HALF
    return None


def _a_model(receiver: ast.expr, statement: bool) -> bool:
    """The receiver of a float16 conversion is a module: converted in place (a statement; a
    tensor's conversion would be discarded), or built on the same line (`Net().cuda()`)."""
    if statement:
        return isinstance(receiver, (ast.Name, ast.Attribute))
    while isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute):
        if receiver.func.attr in _MODEL_BUILDERS:
            return True
        receiver = receiver.func.value
    if isinstance(receiver, ast.Call):
        name = _name(receiver.func)
        return name[:1].isupper()
    return False


def _float16_autocast(call: ast.Call, kw: dict[str | None, ast.expr], names_float16: bool) -> bool:
    """An autocast call that means float16 on CUDA: not disabled, not on the CPU, no
    bfloat16 (a `dtype=` variable counts where the file names float16)."""
    if _is(kw.get("enabled"), False):
        return False
    device = kw.get("device_type", call.args[0] if call.args else None)
    if _is(device, "cpu"):
        return False
    dtype = kw.get("dtype")
    if dtype is None:
        return True
    if _half_dtype(dtype):
        return True
    text = ast.unparse(dtype)
    return "bf16" not in text and "bfloat16" not in text and names_float16


def _dict_evidence(node: ast.Dict) -> tuple[str, str] | None:
    """`{"fp16": {"enabled": True}}` (DeepSpeed), `{"precision": "16-mixed"}`."""
    for key, value in zip(node.keys, node.values, strict=False):
        if _is(key, "fp16") and isinstance(value, ast.Dict):
            if any(
                _is(k, "enabled") and _is(v, True)
                for k, v in zip(value.keys, value.values, strict=False)
            ):
                return '"fp16" enabled', AUTOCAST
        if _is(key, "precision") and _is(value, 16, "16", "16-mixed"):
            return "precision=16", AUTOCAST
    return None


#: Per file version (path, size, mtime): its evidence.
_FILES: dict[tuple[str, int, int], tuple[ProjectHalf, ...]] = {}


def _file_evidence(path: str) -> tuple[ProjectHalf, ...]:
    from numlint.analysis.summaries import file_text

    try:
        st = os.stat(path)
    except OSError:
        return ()
    key = (path, st.st_size, st.st_mtime_ns)
    found = _FILES.get(key)
    if found is None:
        if len(_FILES) > 20_000:
            _FILES.clear()
        text = file_text(path)
        found = _FILES[key] = scan_text(path, text) if text else ()
    return found


def project_evidence(ctx: Context) -> tuple[str, tuple[ProjectHalf, ...]]:
    """The project's root and its float16 settings (cached for the file being linted)."""
    cached = ctx.shared.get("project_half")
    if cached is not None:
        return cached
    from numlint.analysis.summaries import project_files, project_root

    root, found = "", ()
    if os.path.isfile(ctx.path):
        root = project_root(os.path.abspath(ctx.path))
        files, directories = project_files(root)
        found = tuple(e for p in files for e in _file_evidence(p))
        project = ctx.project
        if project is not None:  # a file added or removed, or the evidence edited
            project.dependencies.update(directories)
            firsts = {e.kind: e.path for e in reversed(found)}
            project.dependencies.update(firsts.values())
    ctx.shared["project_half"] = (root, found)
    return root, found


def project_half(ctx: Context, kinds: tuple[str, ...] = (AUTOCAST, HALF)) -> str | None:
    """Why the project is believed to run in float16 (`the project trains with float16
    autocast (GradScaler in train.py:12)`), considering evidence of `kinds`; None: no sign."""
    root, found = project_evidence(ctx)
    for e in found:
        if e.kind in kinds:
            return e.describe(root)
    return None


def project_grade(
    ctx: Context, value: Value | None, kinds: tuple[str, ...] = (AUTOCAST, HALF)
) -> tuple[Confidence, str] | None:
    """For a value whose dtype is not visible: (grade, why) when the project runs in float16
    (`project_half`); None without evidence, under `autocast(enabled=False)` or in dtype-aware
    code. Medium in code autograd differentiates (a model's or loss's forward, not a
    constructor, whose buffers are computed before any conversion) where the value is float16
    there: any value under float16 weights, one made by a matmul, convolution or linear layer
    (`autocast_float16`) under mixed precision; low otherwise, and None for a value mixed
    precision keeps in float32 (not made by a float16 op, no float16 weights)."""
    if autocast_disabled(ctx) or dtype_branch(ctx):
        return None
    root, found = project_evidence(ctx)
    evidence = next((e for e in found if e.kind in kinds), None)
    if evidence is None:
        return None
    half = next((e for e in found if e.kind == HALF), None) if HALF in kinds else None
    from numlint.analysis.gradients import gradient_evident

    func = ctx.function
    float16_op = value is not None and autocast_float16(ctx, value)
    if half is None and not float16_op:
        return None  # mixed precision keeps this value in float32: the eps holds
    grade: Confidence = "low"
    if gradient_evident(ctx) and not (func is not None and func.name.value == "__init__"):
        if half is not None:
            evidence, grade = half, "medium"
        elif float16_op:
            grade = "medium"
    return grade, evidence.describe(root)


#: Ops autocast runs in float16 on CUDA (functions, methods and `nn` layers).
_FLOAT16_OPS = frozenset(
    {"matmul", "mm", "bmm", "baddbmm", "addmm", "addbmm", "addmv", "mv", "einsum", "linear",
     "bilinear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
     "conv_transpose3d", "scaled_dot_product_attention"}
)  # fmt: skip
_FLOAT16_LAYERS = frozenset(
    {"Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
     "ConvTranspose3d", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d"}
)  # fmt: skip
#: Methods whose result keeps the receiver's dtype.
_KEEPS = frozenset(
    {"transpose", "permute", "view", "reshape", "contiguous", "unsqueeze", "squeeze", "flatten",
     "masked_fill", "masked_fill_", "add", "sub", "mul", "div", "add_", "mul_", "div_", "clone",
     "abs", "neg", "relu", "gelu", "tanh", "sigmoid", "max", "min", "amax", "amin", "mean",
     "clamp", "clamp_min", "clip", "expand", "repeat", "chunk", "split", "narrow", "flip",
     "roll", "tril", "triu", "diagonal", "sqrt", "square", "var", "std"}
)  # fmt: skip


def autocast_float16(ctx: Context, value: Value, depth: int = 8) -> bool:
    """Under CUDA autocast, `value` is float16: made by a matmul, a convolution or a linear
    layer (`q @ k.T`, `torch.bmm`, `self.proj(x)` with `self.proj = nn.Linear(...)`),
    directly or through ops that keep the dtype (`s / d`, `s.transpose(1, 2)`, `s[..., 0]`)."""
    if depth <= 0:
        return False
    value = ctx.deref(value)
    node, env = value.node, value.env
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, cst.MatrixMultiply):
            return True
        if isinstance(node.operator, cst.Power):
            return False
        return autocast_float16(ctx, Value(node.left, env), depth - 1) or autocast_float16(
            ctx, Value(node.right, env), depth - 1
        )
    if isinstance(node, cst.UnaryOperation):
        return autocast_float16(ctx, Value(node.expression, env), depth - 1)
    if isinstance(node, cst.Subscript):
        return autocast_float16(ctx, Value(node.value, env), depth - 1)
    if not isinstance(node, cst.Call):
        return False
    callee = ctx.callee(node, env)
    if callee.instance_of is not None:
        return callee.instance_of.rsplit(".", 1)[-1] in _FLOAT16_LAYERS
    if callee.qualname is not None:
        name = callee.qualname.rsplit(".", 1)[-1]
        if not callee.qualname.startswith("torch."):
            return False
        if name in _FLOAT16_OPS:
            return True
        first = node.args[0].value if node.args and node.args[0].keyword is None else None
        if name in _KEEPS and first is not None:
            return autocast_float16(ctx, Value(first, env), depth - 1)
        return False
    if callee.method is not None and callee.receiver is not None:
        if callee.method in _FLOAT16_OPS:
            return True
        if callee.method in _KEEPS:
            return autocast_float16(ctx, Value(callee.receiver, env), depth - 1)
    return False


def in_autocast(ctx: Context) -> bool:
    """Inside an enabled `with ...autocast(...):` block (of any dtype): autocast decides the
    precision of the ops on its lists, whatever the weights."""
    for node in ctx.ancestors():
        if isinstance(node, cst.With):
            for item in node.items:
                call = item.item
                if isinstance(call, cst.Call) and not _disables_autocast(call):
                    func = call.func
                    name = func.attr.value if isinstance(func, cst.Attribute) else None
                    if name == "autocast" or (
                        isinstance(func, cst.Name) and func.value == "autocast"
                    ):
                        return True
    return False


def _disables_autocast(call: cst.BaseExpression) -> bool:
    """`autocast(..., enabled=False)`, `custom_fwd(cast_inputs=torch.float32)`."""
    if not isinstance(call, cst.Call):
        return False
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
    if name == "custom_fwd":
        return keyword(call, "cast_inputs") is not None
    if name != "autocast":
        return False
    enabled = keyword(call, "enabled")
    return isinstance(enabled, cst.Name) and enabled.value == "False"


def autocast_disabled(ctx: Context) -> bool:
    """Inside `with torch.autocast(..., enabled=False):` or a function decorated with it (or
    with `custom_fwd(cast_inputs=...)`): code that chose its own precision."""
    for node in ctx.ancestors():
        if isinstance(node, cst.With):
            if any(_disables_autocast(item.item) for item in node.items):
                return True
        elif isinstance(node, cst.FunctionDef):
            if any(_disables_autocast(d.decorator) for d in node.decorators):
                return True
    return False


#: Ops autocast runs in float32 on CUDA: their outputs are float32 under mixed precision.
_FLOAT32_OPS = frozenset(
    {"norm", "sum", "pow", "exp", "log", "log2", "log10", "log1p", "expm1", "softmax",
     "log_softmax", "softmin", "cumsum", "cumprod", "prod", "rsqrt", "reciprocal", "normalize",
     "cosine_similarity", "cdist", "pdist", "dist", "layer_norm", "group_norm", "vector_norm",
     "softplus", "acos", "asin", "cosh", "sinh", "tan", "erfinv", "renorm", "mse_loss",
     "l1_loss", "smooth_l1_loss", "cross_entropy", "nll_loss", "kl_div",
     "binary_cross_entropy_with_logits"}
)  # fmt: skip


def autocast_float32(ctx: Context, value: Value, depth: int = 4) -> bool:
    """`value` is made by an op autocast runs in float32 (`x.norm()`, `torch.exp(s)`,
    `d ** 2`): float32 under mixed precision whatever its inputs."""
    if depth <= 0:
        return False
    value = ctx.deref(value)
    node = value.node
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Power):
        return True
    if isinstance(node, cst.Subscript):
        return autocast_float32(ctx, Value(node.value, value.env), depth - 1)
    if not isinstance(node, cst.Call):
        return False
    callee = ctx.callee(node, value.env)
    if callee.qualname is not None:
        return callee.qualname.startswith("torch.") and (
            callee.qualname.rsplit(".", 1)[-1] in _FLOAT32_OPS
        )
    return callee.method in _FLOAT32_OPS
