"""Step-time overhead of the runtime monitor against its peers, measured side by side.

For a tiny MLP (a step well under a millisecond: the monitor's fixed cost per step), an MLP,
a small CNN and a small transformer (CPU, Adam), one model trains under four
variants interleaved round-robin in one process, a block of steps each (warm-up rounds first,
the order alternating each round; each variant's hooks are installed and removed outside the
timed block, and the same model object serves all four so weight placement cannot differ):

  none        no monitoring
  numlint     numlint.watch(model, optimizer), its defaults: the batch (and the RNG state, for
              a model that draws random numbers) kept for re-running a failing step, the loss
              and every parameter's gradient norm read once per step before optimizer.step
              (the global norm logged), JSONL log; per-module flags (module_hooks=True) and
              the gradient at the model output kept by a hook (check_backward=True) are
              --breakdown rows
  isnan-hook  a forward hook per module doing `if out.isnan().any(): raise` (a host read per
              layer, forward only)
  anomaly     torch.autograd.set_detect_anomaly(True) around the step (backward only)

Prints the median step time of each (wall clock and process CPU time, the latter steadier on a
shared machine), its ratio to `none`, and numlint's added time per step. One intra-op thread by default (--threads), for the
same reason. Usage:

    python benchmarks/monitor_overhead.py [--quick] [--rounds N] [--models tiny,mlp,cnn,transformer]
    python benchmarks/monitor_overhead.py --breakdown --models tiny   # each optional part's cost
    python benchmarks/monitor_overhead.py --device cuda                # the models on a GPU
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn

import numlint

Batch = tuple[torch.Tensor, torch.Tensor]


def mlp() -> tuple[nn.Module, Callable[[], Batch], Callable[..., torch.Tensor]]:
    model = nn.Sequential(
        nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)
    )

    def batch() -> Batch:
        return torch.randn(128, 784), torch.randint(0, 10, (128,))

    return model, batch, nn.functional.cross_entropy


def cnn() -> tuple[nn.Module, Callable[[], Batch], Callable[..., torch.Tensor]]:
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(64 * 8 * 8, 10),
    )

    def batch() -> Batch:
        return torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))

    return model, batch, nn.functional.cross_entropy


class TinyTransformer(nn.Module):
    """Embedding, two pre-norm encoder layers and a vocabulary head."""

    def __init__(self, vocab: int = 1000, d: int = 128, heads: int = 4, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(
            d, heads, dim_feedforward=4 * d, dropout=0.1, batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(self.encoder(self.embed(tokens))))


def transformer() -> tuple[nn.Module, Callable[[], Batch], Callable[..., torch.Tensor]]:
    model = TinyTransformer()

    def batch() -> Batch:
        return torch.randint(0, 1000, (16, 64)), torch.randint(0, 1000, (16, 64))

    def loss(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(out.flatten(0, 1), y.flatten())

    return model, batch, loss


def tiny() -> tuple[nn.Module, Callable[[], Batch], Callable[..., torch.Tensor]]:
    """A step well under a millisecond on a CPU: what the monitor's fixed cost per step is
    measured on."""
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def batch() -> Batch:
        return torch.randn(16, 32), torch.randint(0, 4, (16,))

    return model, batch, nn.functional.cross_entropy


MODELS = {"tiny": tiny, "mlp": mlp, "cnn": cnn, "transformer": transformer}
#: Steps per timed block, as a multiple of --block: a tiny step needs many to be timed well.
BLOCK_FACTOR = {"tiny": 50}
#: The model whose added time is the monitor's fixed cost per step, and the target for it.
FIXED_COST_MODEL, FIXED_COST_TARGET_MS = "tiny", 0.05
VARIANTS = ("none", "numlint", "isnan-hook", "anomaly")
#: --breakdown: numlint with one optional part switched from its default (the options of
#: `numlint.watch`), each against no monitor: no JSONL file; the gradient at the model output
#: kept by a hook (by default worked out on the failure path); per-module flags (every module
#: output and the gradients flowing into modules, the output gradient kept: every check on).
BREAKDOWN: dict[str, dict[str, Any]] = {
    "log=None": {"log": None},
    "check_backward=True": {"check_backward": True},
    "module_hooks=True": {"module_hooks": True},
    "module_hooks=True, log=None": {"module_hooks": True, "log": None},
}


def _isnan_hook(name: str) -> Callable[..., None]:
    def hook(module: nn.Module, args: Any, out: Any) -> None:
        if isinstance(out, torch.Tensor) and out.isnan().any():
            raise FloatingPointError(f"NaN in {name}")

    return hook


class Bench:
    """One model, its optimizer, and the variants switched on around a block of steps.

    Every variant trains the same model object: separate copies would put the weights at
    different addresses, and that alone moves a small model's step time by several percent."""

    def __init__(self, model: nn.Module, loss_fn: Callable[..., Any], log: Path) -> None:
        self.model = model
        self.loss_fn = loss_fn
        self.opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        self.monitor = numlint.watch(model, self.opt, log=log / "events.jsonl")
        self.log = log
        self.options: dict[str, Any] = {}  # the --breakdown monitors, made when first used

    @contextlib.contextmanager
    def variant(self, name: str) -> Iterator[None]:
        """Install the variant's instrumentation (outside the timed region) and remove it."""
        with contextlib.ExitStack() as stack:
            if name == "numlint":
                stack.enter_context(self.monitor)
            elif name in BREAKDOWN:
                if name not in self.options:
                    opts = {"log": self.log / f"events.{len(self.options)}.jsonl"}
                    opts.update(BREAKDOWN[name])
                    self.options[name] = numlint.watch(self.model, self.opt, **opts)
                stack.enter_context(self.options[name])
            elif name == "isnan-hook":
                for mname, module in self.model.named_modules():
                    stack.callback(module.register_forward_hook(_isnan_hook(mname)).remove)
            elif name == "anomaly":
                stack.enter_context(warnings.catch_warnings())
                warnings.simplefilter("ignore")
                stack.enter_context(torch.autograd.set_detect_anomaly(True))
            yield

    def step(self, batch: Batch) -> float:
        x, y = batch
        self.opt.zero_grad(set_to_none=True)
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        self.opt.step()
        return float(loss.detach())


def measure(
    name: str,
    rounds: int,
    block: int,
    warmup: int,
    log: Path,
    variants: tuple[str, ...] = VARIANTS,
    device: str = "cpu",
) -> dict[str, dict[str, float]]:
    """Median per-step seconds per variant (wall clock and process CPU time), the variants
    interleaved round-robin so that drifts in machine load hit every variant alike. On a GPU
    each block ends with a synchronize, so its time holds the kernels it launched."""
    torch.manual_seed(0)
    model, make_batch, loss_fn = MODELS[name]()
    model.to(device)
    (log / name).mkdir(parents=True, exist_ok=True)
    bench = Bench(model, loss_fn, log / name)
    batches = [tuple(t.to(device) for t in make_batch()) for _ in range(8)]
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    block *= BLOCK_FACTOR.get(name, 1)
    wall: dict[str, list[float]] = {v: [] for v in variants}
    cpu: dict[str, list[float]] = {v: [] for v in variants}
    for r in range(warmup + rounds):
        order = variants if r % 2 == 0 else variants[::-1]  # no variant always runs first
        for variant in order:
            with bench.variant(variant):
                sync()
                w0, c0 = time.perf_counter(), time.process_time()
                for k in range(block):
                    bench.step(batches[(r * block + k) % len(batches)])  # type: ignore[arg-type]
                sync()
                w1, c1 = time.perf_counter(), time.process_time()
            if r >= warmup:
                wall[variant].append((w1 - w0) / block)
                cpu[variant].append((c1 - c0) / block)
    return {
        "wall": {v: statistics.median(ts) for v, ts in wall.items()},
        "cpu": {v: statistics.median(ts) for v, ts in cpu.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run (fewer rounds)")
    parser.add_argument("--rounds", type=int, default=None, help="measured rounds per model")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated models")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch intra-op threads (default 1: steadier)"
    )
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="instead: numlint's added CPU time with each optional part off (see BREAKDOWN)",
    )
    parser.add_argument(
        "--device", default="cpu", help="where the models train (default cpu; e.g. cuda)"
    )
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device is available")
    torch.set_num_threads(args.threads)
    rounds = args.rounds or (6 if args.quick else 30)
    block, warmup = (2, 2) if args.quick else (3, 3)
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        parser.error(f"unknown model(s): {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    print(
        f"torch {torch.__version__}, {args.device}, {torch.get_num_threads()} thread(s), "
        f"{rounds} rounds x "
        f"{block} steps per variant, interleaved; median step time and ratio to 'none'"
    )
    if args.breakdown:
        return breakdown(names, rounds, block, warmup, args.device)
    header = f"{'model':<12}{'clock':<6}" + "".join(f"{v:>20}" for v in VARIANTS)
    print(header)
    print("-" * len(header))
    fixed_cost = None
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            med = measure(name, rounds, block, warmup, Path(tmp), device=args.device)
            if name == FIXED_COST_MODEL:
                fixed_cost = (med["cpu"]["numlint"] - med["cpu"]["none"]) * 1e3
            for clock in ("wall", "cpu"):
                m = med[clock]
                cells = [f"{m[v] * 1e3:8.3f} ms {m[v] / m['none']:5.3f}x" for v in VARIANTS]
                fixed = (m["numlint"] - m["none"]) * 1e3
                print(
                    f"{name:<12}{clock:<6}"
                    + "".join(f"{c:>20}" for c in cells)
                    + f"   numlint +{fixed:.3f} ms/step"
                )
            sys.stdout.flush()
    print(
        "wall: perf_counter; cpu: process CPU time (steadier on a shared machine). "
        "ratio = median / median of 'none' (lower is better)"
    )
    if fixed_cost is not None:
        print(
            f"numlint fixed cost per step ({FIXED_COST_MODEL} model on {args.device}, process "
            f"CPU time): +{fixed_cost:.3f} ms (target on cpu: at most {FIXED_COST_TARGET_MS:.3f} ms)"
        )
    return 0


def breakdown(names: list[str], rounds: int, block: int, warmup: int, device: str) -> int:
    """Print numlint's added CPU time per step, by default and with each optional part off."""
    variants = ("none", "numlint", *BREAKDOWN)
    print(f"{'model':<12}{'numlint, options':<26}{'cpu/step':>12}{'added':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            cpu = measure(name, rounds, block, warmup, Path(tmp), variants, device)["cpu"]
            for v in variants[1:]:
                label = "default" if v == "numlint" else v
                added = (cpu[v] - cpu["none"]) * 1e3
                print(f"{name:<12}{label:<26}{cpu[v] * 1e3:9.3f} ms{added:+9.3f} ms")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
