"""numlint's runtime monitor on a small CPU training run where a NaN begins in a known layer at a
known step.

`Entropy` below takes the log of a softmax. At step 40 the data holds one outlier row (a
unit error: a thousand times too large): the softmax of that row underflows to exact zeros and
p * log(p) is 0 * -inf = NaN. The static check flags the line before training
(`numlint check examples/`);
the monitor names the layer, step and phase when it happens, replay names the aten op and the
line, and `numlint report` plots the run.

    python examples/monitor_demo.py [--out DIR]      (or: make demo)
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

import numlint

BAD_STEP = 40


class Entropy(nn.Module):
    """Per-feature entropy terms of the softmax over features."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = F.softmax(x, dim=-1)
        return -(p * torch.log(p))


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(16, 32)
        self.entropy = Entropy()
        self.head = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.entropy(self.embed(x)))


def batches(steps: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    for step in range(steps):
        x = torch.randn(32, 16, generator=g)
        if step == BAD_STEP:
            x[7] *= 1000.0  # an outlier row
        yield x, torch.randint(0, 4, (32,), generator=g)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("."), help="where the log goes")
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model = Classifier()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    log = out / "events.jsonl"
    try:
        with numlint.watch(model, opt, log=log):
            for x, y in batches(100):
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                opt.zero_grad()
    except numlint.NonFiniteError as err:
        print(err)  # the monitor's event, one line
        ev = err.event
        print(f"  module {ev['module']!r}, step {ev['step']}, phase {ev['phase']}, {ev['kind']}")
        print(numlint.replay(err.snapshot, model))  # the aten op and the source line
    print(f"event log: {log}")


if __name__ == "__main__":
    main()
