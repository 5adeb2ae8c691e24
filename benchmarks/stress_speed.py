"""Time `numlint.stress` on a small transformer against a plain forward+backward loop.

The model: a linear input projection, two pre-norm encoder layers (d=64, 4 heads) and a
classification head; a batch of 8 sequences of 16 feature vectors; cross-entropy loss. Stress
runs its default scenarios at float32, float16 and bfloat16 (18 runs, each under the monitor,
with the failure path wherever a run makes a NaN/Inf). The peer, measured in the same process
and interleaved with it: as many plain forward+backward passes (float32, autocast for the
half dtypes) as stress completed runs. Prints the median of each, their ratio, and the verdict
against the 10 s target. Usage:

    python benchmarks/stress_speed.py [--repeats N] [--threads N]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time

import torch
from torch import nn

import numlint

TARGET_S = 10.0


class SmallTransformer(nn.Module):
    """Input projection, two pre-norm encoder layers, mean pooling and a head."""

    def __init__(self, features: int = 32, d: int = 64, heads: int = 4, classes: int = 10) -> None:
        super().__init__()
        self.proj = nn.Linear(features, d)
        layer = nn.TransformerEncoderLayer(
            d, heads, dim_feedforward=4 * d, dropout=0.1, batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(self.encoder(self.proj(x))).mean(1))


def plain_loop(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, dtypes: list[str], n: int
) -> None:
    """`n` forward+backward passes spread over the dtypes, as stress runs them."""
    per = max(1, n // len(dtypes))
    for dtype in dtypes:
        ctx = (
            contextlib.nullcontext()
            if dtype == "float32"
            else torch.autocast("cpu", dtype=getattr(torch, dtype))
        )
        for _ in range(per):
            model.zero_grad(set_to_none=True)
            with ctx:
                loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
    model.zero_grad(set_to_none=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats of each (median)")
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads (0: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = SmallTransformer()
    x, y = torch.randn(8, 16, 32), torch.randint(0, 10, (8,))

    def loss_fn(out: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(out.float(), y)

    first = numlint.stress(model, x, loss_fn=loss_fn)  # warm-up: imports, the static side
    runs = [r for r in first.runs if r.status != "skipped"]
    dtypes = first.completed_dtypes()
    plain_loop(model, x, y, dtypes, len(runs))
    stress_s, plain_s = [], []
    for _ in range(args.repeats):
        t = time.perf_counter()
        numlint.stress(model, x, loss_fn=loss_fn)
        stress_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        plain_loop(model, x, y, dtypes, len(runs))
        plain_s.append(time.perf_counter() - t)
    s, p = statistics.median(stress_s), statistics.median(plain_s)
    print(
        f"model: SmallTransformer (2 layers, d=64, batch 8x16), threads: {torch.get_num_threads()}"
    )
    print(
        f"stress runs: {len(runs)} completed, {len(first.skipped)} skipped; "
        f"{len(first.incidents)} incidents"
    )
    print(
        f"numlint.stress       median {s:7.3f} s  (range {min(stress_s):.3f}-{max(stress_s):.3f})"
    )
    print(
        f"plain fwd+bwd x{len(runs):<3}   median {p:7.3f} s  (range {min(plain_s):.3f}-{max(plain_s):.3f})"
    )
    print(f"ratio: {s / p:.1f}x the plain loop")
    verdict = "within" if s <= TARGET_S else "OVER"
    print(f"target {TARGET_S:.0f} s: {verdict} ({s:.2f} s)")


if __name__ == "__main__":
    main()
