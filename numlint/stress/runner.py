"""`stress(model, example_inputs)`: run the user's model forward and backward on the inputs
that break models, at each dtype, under the monitor in record mode; report where the first
NaN/Inf of each run began and the static findings it confirms.

The model is left as it was: parameters and buffers bit-identical, training/eval modes, the
`.grad` tensors (the very objects) and the RNG state are restored after every run."""

from __future__ import annotations

import contextlib
import linecache
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from numlint.monitor.stats import flat_tensors, iter_tensors
from numlint.stress import scenarios as sc
from numlint.stress.link import Linker
from numlint.stress.lossfn import LossInputs, loss_inputs
from numlint.stress.report import (
    ExercisedClass,
    StressFailure,
    StressIncident,
    StressReport,
    StressRun,
)
from numlint.stress.trace import LineTrace

DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16")
_TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
_ALIASES = {"fp32": "float32", "fp16": "float16", "half": "float16", "bf16": "bfloat16"}
#: The monitor's phases as a stress incident names them.
_PHASES = {"forward": "forward", "loss": "loss", "backward": "backward", "grad": "backward"}


class StressError(ValueError):
    """The model cannot be stressed at all (it does not run on the example inputs)."""


def stress(
    model: nn.Module,
    example_inputs: Any,
    *,
    loss_fn: Callable[[Any], Tensor] | None = None,
    dtypes: Sequence[str | torch.dtype] = DTYPES,
    scenarios: Sequence[str] | None = None,
    seed: int = 0,
) -> StressReport:
    """Run `model` forward and backward on stressed copies of `example_inputs` and report
    where the first NaN/Inf of each scenario and dtype began.

    `example_inputs`: a tensor (`model(x)`), a tuple or list (`model(*inputs)`) or a dict
    (`model(**inputs)`), nested structures allowed; floating-point tensors are perturbed,
    integer and bool tensors (token ids, masks) are kept. `loss_fn(output)` gives the loss
    (default: the sum of the floating-point outputs). `dtypes`: "float32" runs the model as
    it is; "float16" and "bfloat16" run it under autocast on its device (a dtype the device
    cannot run is reported as skipped). `scenarios`: names from `SCENARIOS` (default: all).
    `seed` seeds torch's RNG before every run (dropout); the caller's RNG state is restored."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"stress() needs an nn.Module, got {type(model).__name__}")
    if loss_fn is not None and not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
    if not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if next(iter_tensors(example_inputs), None) is None:
        raise StressError("example_inputs holds no tensor: pass the inputs the model is called on")
    chosen = sc.resolve(scenarios)
    names = _dtype_names(dtypes)
    device = _device(model, example_inputs)
    report = StressReport(model=type(model).__name__, seed=seed)
    start = time.perf_counter()
    state = ModelState(model)
    linker = Linker()
    with _rng_restored():
        try:
            run = _Runner(model, example_inputs, loss_fn, device, seed, state, linker)
            trace = LineTrace(linker.user_file)
            with trace:
                ran, run.last_layer = _baseline(model, example_inputs, seed, state, run.loss)
            report.exercised = _exercised(model, ran, linker, loss_fn, trace)
            if trace.on:
                report.lines = {p: sorted(rows) for p, rows in trace.lines.items()}
            report.roles = sorted(run.roles)
            if scenarios is None:  # (the default set: label, mask and sequence scenarios
                # only for inputs that hold such tensors; one named is reported as skipped)
                chosen = [s for s in chosen if not s.roles or run.roles.intersection(s.roles)]
            for dtype in names:
                report.runs += run.dtype(dtype, chosen, report.incidents)
            report.errors = run.failures()
        finally:
            state.restore()
    report.seconds = time.perf_counter() - start
    return report


def _dtype_names(dtypes: Any) -> list[str]:
    if isinstance(dtypes, (str, torch.dtype)):
        dtypes = [dtypes]
    out = []
    by_dtype = {v: k for k, v in _TORCH_DTYPES.items()}
    for d in dtypes:
        name = by_dtype.get(d) if isinstance(d, torch.dtype) else _ALIASES.get(d, d)
        if name not in _TORCH_DTYPES:
            raise ValueError(f"unknown dtype {d!r} for stress (known: {', '.join(_TORCH_DTYPES)})")
        out.append(name)
    if not out:
        raise ValueError("dtypes is empty: name at least one (float32, float16, bfloat16)")
    return list(dict.fromkeys(out))


def _device(model: nn.Module, inputs: Any) -> torch.device:
    for t in model.parameters():
        return t.device
    for t in model.buffers():
        return t.device
    found: list[Tensor] = []
    sc.map_floats(inputs, lambda t: found.append(t) or t)
    return found[0].device if found else torch.device("cpu")


def call(model: nn.Module, inputs: Any) -> Any:
    """Call the model the way `example_inputs` says: a tensor, positional or keyword arguments."""
    if isinstance(inputs, dict):
        return model(**inputs)
    if isinstance(inputs, (tuple, list)) and not hasattr(inputs, "_fields"):
        return model(*inputs)
    return model(inputs)


class ModelState:
    """The model's parameters, buffers, `.grad` tensors and modes, to put back after a run."""

    def __init__(self, model: nn.Module) -> None:
        seen: set[int] = set()
        self.tensors: list[tuple[Tensor, Tensor]] = []
        for t in [*model.parameters(), *model.buffers()]:
            if id(t) not in seen:
                seen.add(id(t))
                self.tensors.append((t, t.detach().clone()))
        self.grads = [(p, p.grad) for p in model.parameters()]
        self.modes = [(m, m.training) for m in model.modules()]

    def clear_grads(self) -> None:
        """Start a run with no gradients (the caller's are kept aside, untouched)."""
        for p, _ in self.grads:
            p.grad = None

    def restore(self) -> None:
        """Parameters and buffers a run changed copied back bit for bit, gradients and modes
        as they were."""
        # Always copied: kernels (batch norm's running statistics) and `.data` change
        # tensors without a version counter to tell.
        with torch.no_grad():
            for t, saved in self.tensors:
                if t.shape != saved.shape or t.dtype != saved.dtype:
                    t.data = saved.clone()
                else:
                    t.copy_(saved)
        for p, g in self.grads:
            p.grad = g
        for m, mode in self.modes:
            m.training = mode


@contextlib.contextmanager
def _rng_restored() -> Iterator[None]:
    cpu = torch.get_rng_state()
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    try:
        yield
    finally:
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


def _seed(seed: int) -> None:
    torch.manual_seed(seed)


def _own_params(m: nn.Module) -> bool:
    return any(True for _ in m.parameters(recurse=False))


def _baseline(
    model: nn.Module, inputs: Any, seed: int, state: ModelState, loss: Callable[[Any], Tensor]
) -> tuple[list[nn.Module], nn.Module | None]:
    """One plain forward on the inputs as given (float32, no gradients): the modules that
    run, and the last one with parameters of its own (the layer whose output is the logits).
    StressError when the model does not run or the inputs hold NaN/Inf."""
    bad = [t for t in flat_tensors(inputs) if not bool(torch.isfinite(t).all())]
    if bad:
        raise StressError("example_inputs already hold NaN/Inf: stress needs finite inputs")
    ran: dict[int, nn.Module] = {}
    last: list[nn.Module | None] = [None]

    def pre(m: nn.Module, args: Any) -> None:
        ran.setdefault(id(m), m)

    def post(m: nn.Module, args: Any, out: Any) -> None:
        if _own_params(m):
            last[0] = m

    handles = []
    for m in model.modules():
        handles.append(m.register_forward_pre_hook(pre))
        handles.append(m.register_forward_hook(post))
    _seed(seed)
    try:
        with torch.no_grad():
            loss(call(model, sc.apply(sc.SCENARIOS[0], inputs)))
    except Exception as exc:
        raise StressError(
            f"the model raised on the example inputs as given: {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        for h in handles:
            h.remove()
        state.restore()
    return list(ran.values()), last[0]


def _exercised(
    model: nn.Module, ran: list[nn.Module], linker: Linker, loss_fn: Any, trace: LineTrace
) -> list[ExercisedClass]:
    """The user's classes and functions (the loss function and every helper it or the model
    called) whose code ran, with the modules of each and the lines that ran (when traced)."""
    names = {id(m): n for n, m in model.named_modules()}
    found: dict[tuple[str, str], list[str]] = {}
    for m in ran:
        for path, qualname, _, _ in linker.classes(m):
            found.setdefault((path, qualname), []).append(names.get(id(m), "?") or "<model>")
    if loss_fn is not None:
        for path, qualname, _, _ in linker.function(loss_fn):
            found.setdefault((path, qualname), []).append("<loss>")
    for path, qualname in trace.functions:
        if not any(p == path and (q == qualname or qualname.startswith(q + ".")) for p, q in found):
            found.setdefault((path, qualname), []).append("<called>")
    return [ExercisedClass(p, q, tuple(mods)) for (p, q), mods in found.items()]


def autocast_problem(device: torch.device, dtype: str) -> str:
    """Why the device cannot autocast to `dtype` ("" when it can)."""
    if dtype == "float32":
        return ""
    kind = device.type
    try:
        if not torch.amp.is_autocast_available(kind):
            return f"autocast is not available on {kind}"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with torch.autocast(kind, dtype=_TORCH_DTYPES[dtype]):
                on = torch.is_autocast_enabled(kind)
    except (RuntimeError, ValueError, TypeError, AttributeError) as exc:
        return f"autocast to {dtype} on {kind} failed: {exc}"
    if not on:
        said = "; ".join(str(w.message) for w in caught)
        return f"autocast to {dtype} is not supported on {kind}" + (f" ({said})" if said else "")
    return ""


class _Runner:
    """The runs of one stress call."""

    def __init__(
        self,
        model: nn.Module,
        inputs: Any,
        loss_fn: Any,
        device: torch.device,
        seed: int,
        state: ModelState,
        linker: Linker,
    ) -> None:
        self.model = model
        self.inputs = inputs
        self.loss_fn = loss_fn
        self.loss_in: LossInputs | None = loss_inputs(loss_fn) if loss_fn is not None else None
        self.device = device
        self.seed = seed
        self.state = state
        self.linker = linker
        self.last_layer: nn.Module | None = None
        self.phase = "forward"
        self.names = {id(m): n for n, m in model.named_modules()}
        loss_values = self.loss_in.values if self.loss_in is not None else []
        #: the roles of the inputs a scenario can change ("floats", "labels", ...)
        self.roles = sc.roles_in(inputs) | sc.roles_in(loss_values, loss_side=True)
        self._fn: Any = loss_fn  # the loss function of the current run
        self._errors: dict[tuple[str, str, str], StressFailure] = {}

    def dtype(
        self, dtype: str, chosen: list[sc.Scenario], incidents: list[StressIncident]
    ) -> list[StressRun]:
        """Every scenario at one dtype; all skipped when the device cannot run it."""
        problem = autocast_problem(self.device, dtype)
        if problem:
            return [StressRun(s.name, dtype, "skipped", problem) for s in chosen]
        runs: list[StressRun] = []
        loss_values = self.loss_in.values if self.loss_in is not None else []
        for k, s in enumerate(chosen):
            if not sc.applies(s, self.inputs, loss_values):
                runs.append(StressRun(s.name, dtype, "skipped", _nothing_to_change(s, self.roles)))
                continue
            try:
                incident = self.run(s, dtype)
            except Exception as exc:
                problem = self.unsupported(dtype)
                if problem:
                    runs += [StressRun(x.name, dtype, "skipped", problem) for x in chosen[k:]]
                    return runs
                self.error(s, dtype, exc)
                runs.append(StressRun(s.name, dtype, "error", _first_line(exc)))
                continue
            finally:
                self.state.restore()
            if incident is None:
                runs.append(StressRun(s.name, dtype, "ok"))
            else:
                runs.append(StressRun(s.name, dtype, "failed"))
                incidents.append(incident)
        return runs

    def autocast(self, dtype: str) -> contextlib.AbstractContextManager[Any]:
        if dtype == "float32":
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=_TORCH_DTYPES[dtype])

    def run(self, scenario: sc.Scenario, dtype: str) -> StressIncident | None:
        """One forward and backward under the monitor: the incident it records, if any."""
        from numlint.monitor.monitor import watch

        # (a scaled input stays within half the square root of the dtype's largest value: the
        # product of two such values, a square, a sum over a batch of them stay finite)
        limit = float(torch.finfo(_TORCH_DTYPES[dtype]).max) ** 0.5 / 2
        inputs = sc.apply(scenario, self.inputs, limit)
        self._fn = self.loss_fn
        if self.loss_in is not None and self.loss_in.values:
            values = sc.apply(scenario, self.loss_in.values, loss_side=True)
            self._fn = self.loss_in.rebuild(values)
        handle = None
        scale = scenario.logit_scale
        if scale is not None and self.last_layer is not None:
            handle = self.last_layer.register_forward_hook(
                lambda m, a, out: sc.map_floats(out, lambda t: t * scale), prepend=True
            )
        self.state.clear_grads()
        _seed(self.seed)
        mon = watch(
            self.model, action="record", log=None, snapshot=None, static=False, loss_fn=self.loss
        )
        self.phase = "forward"
        try:
            with mon:
                with self.autocast(dtype):
                    out = call(self.model, inputs)
                    if scale is not None and self.last_layer is None:
                        out = sc.map_floats(out, lambda t: t * scale)
                    self.phase = "loss"
                    loss = self.loss(out)
                self.phase = "backward"
                if loss.requires_grad:
                    loss.backward()
        finally:
            if handle is not None:
                handle.remove()
        return self.incident(scenario.name, dtype, mon.events)

    def loss(self, out: Any) -> Tensor:
        if self._fn is None:
            tensors = [t for t in flat_tensors(out) if t.is_floating_point()]
            if not tensors:
                raise TypeError("the model returned no floating-point tensor; pass loss_fn=")
            return torch.stack([t.float().sum() for t in tensors]).sum()
        loss = self._fn(out)
        if not isinstance(loss, Tensor):
            raise TypeError(f"loss_fn returned {type(loss).__name__}, not a tensor")
        return loss if loss.dim() == 0 else loss.sum()

    def incident(
        self, scenario: str, dtype: str, events: list[dict[str, Any]]
    ) -> StressIncident | None:
        """The first incident the monitor recorded, as a stress incident."""
        bad = [e for e in events if e.get("event") == "nonfinite"]
        if not bad:
            return None
        first = min(e.get("incident") or 1 for e in bad)
        bad = [e for e in bad if (e.get("incident") or 1) == first]
        origin = next((e for e in bad if e.get("origin")), bad[0])
        name = str(origin.get("module") or "")
        if origin.get("gradient_of") == "parameter" or origin.get("phase") == "param":
            name = name.rpartition(".")[0]
        phase = _PHASES.get(str(origin.get("phase")), str(origin.get("phase")))
        detail = (
            f"{origin.get('nan_count')} NaN, {origin.get('inf_count')} Inf in "
            f"{origin.get('tensor') or 'tensor'} {origin.get('dtype')}{list(origin.get('shape') or [])}"
            if origin.get("nan_count") is not None
            else f"{origin.get('kind')} in {origin.get('tensor') or 'a tensor'}"
        )
        if origin.get("gradient_of") == "model output" and name == "<loss>":
            value = origin.get("loss_value")
            said = f" ({value:.4g})" if isinstance(value, (int, float)) else ""
            detail = f"the loss finite{said}, its gradient not: " + detail
        op = str(origin.get("op") or "")
        if op and origin.get("autograd_node"):
            op += f" (backward of {origin['autograd_node']})"
        return self.make_incident(
            scenario,
            dtype,
            phase,
            name,
            str(origin.get("kind") or "nan"),
            detail,
            op=op,
            source=str(origin.get("source") or ""),
        )

    def make_incident(
        self,
        scenario: str,
        dtype: str,
        phase: str,
        name: str,
        kind: str,
        detail: str,
        op: str = "",
        source: str = "",
    ) -> StressIncident:
        module = self.module(name)
        if name == "<loss>" and self.loss_fn is not None:
            findings = self.linker.link_function(self.loss_fn, source)
        else:
            findings = self.linker.link(module, source)
        klass = (
            f"{type(module).__module__}.{type(module).__qualname__}" if module is not None else ""
        )
        return StressIncident(
            scenario, dtype, phase, name, kind, klass, op, source, detail, findings
        )

    def module(self, name: str) -> nn.Module | None:
        if name.startswith("<") or name == "?":
            return None
        try:
            return self.model.get_submodule(name)
        except (AttributeError, TypeError):
            return None

    def unsupported(self, dtype: str) -> str:
        """Why `dtype` cannot run at all, after a run at it raised ("" when the model runs at
        that dtype on the inputs as given: the scenario or the loss broke it)."""
        if dtype == "float32":
            return ""
        try:
            _seed(self.seed)
            with torch.no_grad(), self.autocast(dtype):
                call(self.model, sc.apply(sc.SCENARIOS[0], self.inputs))
        except Exception as again:
            return f"the model does not run under {dtype} autocast on {self.device.type}: " + (
                _first_line(again)
            )
        finally:
            self.state.restore()
        return ""

    def error(self, scenario: sc.Scenario, dtype: str, exc: Exception) -> None:
        """A run that raised: recorded once per place and exception, with the runs it ended."""
        name, source, code = "", "", ""
        tb = exc.__traceback__
        while tb is not None:
            frame = tb.tb_frame
            owner = frame.f_locals.get("self")
            if isinstance(owner, nn.Module) and id(owner) in self.names:
                name = self.names[id(owner)]
            path = self.linker.user_file(frame.f_code.co_filename)
            if path is not None:
                source = f"{path}:{tb.tb_lineno}"
                code = linecache.getline(frame.f_code.co_filename, tb.tb_lineno).strip()
            tb = tb.tb_next
        phase = self.phase
        if phase == "loss" or phase == "backward" and not name:
            name = name or "<loss>"
        text = _first_line(exc)
        key = (source or name, type(exc).__name__, phase)  # (its text may vary with the data)
        entry = self._errors.get(key)
        if entry is None:
            module = self.module(name)
            links = self.linker.link(module, source) if source else ()
            entry = self._errors[key] = StressFailure(
                phase, name, text, source, code, findings=tuple(links)
            )
        entry.runs.append((scenario.name, dtype))

    def failures(self) -> list[StressFailure]:
        """The exceptions the runs raised, once each."""
        return list(self._errors.values())


_ROLE_WORDS = {"labels": "integer labels", "masks": "mask", "tokens": "token sequence"}


def _nothing_to_change(s: sc.Scenario, roles: set[str]) -> str:
    if s.roles and not roles.intersection(s.roles):
        return f"no {' or '.join(_ROLE_WORDS[r] for r in s.roles)} input to change"
    if s.roles:
        words = " or ".join(_ROLE_WORDS[r] for r in s.roles)
        return f"the {words} inputs leave nothing to change (a single class, say)"
    return "no floating-point input to change"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")
