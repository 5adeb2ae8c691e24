"""The monitor never changes numerics: the same seeded training gives bit-identical losses and
parameters with and without it, also when a failure is located (re-run) and only recorded."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import numlint  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class Net(nn.Module):
    """Dropout (RNG), BatchNorm (running statistics), a tuple output."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(6, 16)
        self.bn = nn.BatchNorm1d(16)
        self.drop = nn.Dropout(0.3)
        self.out = nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.drop(torch.relu(self.bn(self.inp(x))))
        return self.out(h), h


def run(monitored: bool, poison_at: int | None = None) -> tuple[list[float], list[torch.Tensor]]:
    torch.manual_seed(1234)
    model = Net()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = [(torch.randn(32, 6), torch.randint(0, 3, (32,))) for _ in range(12)]
    monitor = numlint.watch(model, opt, log=None, action="record", static=False)
    losses: list[float] = []
    with monitor if monitored else _null():
        for i, (x, y) in enumerate(data):
            if i == poison_at:
                with torch.no_grad():  # a NaN batch in a side computation: BN and dropout run
                    bad = x.clone()
                    bad[3, 1] = float("nan")
                    model(bad)
            logits, _ = model(x)
            loss = nn.functional.cross_entropy(logits, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    if monitored and poison_at is not None:
        assert any(e["event"] == "nonfinite" for e in monitor.events)
    return losses, [p.detach().clone() for p in model.state_dict().values()]


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_losses_are_bit_identical_with_and_without_the_monitor() -> None:
    plain, plain_state = run(False)
    watched, watched_state = run(True)
    assert plain == watched  # exact float equality, every step
    assert all(torch.equal(a, b) for a, b in zip(plain_state, watched_state, strict=True))


def test_locating_a_failure_does_not_disturb_rng_or_buffers() -> None:
    # The failure path re-runs the failing forward; RNG and BatchNorm statistics are restored.
    plain, plain_state = run(False, poison_at=4)
    watched, watched_state = run(True, poison_at=4)
    assert plain == watched
    for a, b in zip(plain_state, watched_state, strict=True):  # BN statistics hold NaN in both
        torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)


def run_accumulating(monitored: bool) -> tuple[list[float], list[torch.Tensor]]:
    """Two micro-batches per step and gradient clipping: the paths the loss, clip and
    micro-batch checks watch."""
    torch.manual_seed(99)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    losses: list[float] = []
    with numlint.watch(model, opt, log=None, static=False) if monitored else _null():
        for _ in range(6):
            for _ in range(2):
                logits, _ = model(torch.randn(16, 6) * 3)
                loss = nn.functional.cross_entropy(logits, torch.randint(0, 3, (16,))) / 2
                loss.backward()
                losses.append(loss.item())
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            opt.step()
            opt.zero_grad()
    return losses, [p.detach().clone() for p in model.state_dict().values()]


def test_accumulation_and_clipping_stay_bit_identical() -> None:
    plain, plain_state = run_accumulating(False)
    watched, watched_state = run_accumulating(True)
    assert plain == watched
    assert all(torch.equal(a, b) for a, b in zip(plain_state, watched_state, strict=True))
