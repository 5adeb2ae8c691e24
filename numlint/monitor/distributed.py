"""torch.distributed awareness: this process's rank, and one all-reduce per check so that every
rank sees a non-finite value found on any rank at the same step."""

from __future__ import annotations

import torch


def _dist_ready() -> bool:
    return torch.distributed.is_available() and torch.distributed.is_initialized()


def rank() -> int:
    """The global rank, 0 when not running distributed."""
    return torch.distributed.get_rank() if _dist_ready() else 0


def world_size() -> int:
    """The number of processes, 1 when not running distributed."""
    return torch.distributed.get_world_size() if _dist_ready() else 1


def _reduce_device() -> torch.device:
    backend = torch.distributed.get_backend()
    if backend == "nccl" and torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def agree(local_bad: bool, spread_bad: bool = False) -> int | None:
    """The rank where a non-finite value began, agreed by every rank with one all-reduce (MAX):
    the lowest rank whose own data made one (`local_bad`: its loss, activations or gradients
    before DDP's all-reduce), else the lowest rank that sees one only after the all-reduce
    spread it (`spread_bad`), else None. Without torch.distributed only the local answer.

    Every rank must call this at the same check points, which it does: checks run at the end of
    the top-level forward, the end of backward and around optimizer.step on every rank."""
    if not _dist_ready() or world_size() == 1:
        return 0 if local_bad or spread_bad else None
    n, me = world_size(), rank()
    # "bad on rank r" is n - r so MAX picks the lowest bad rank; 0 means all finite.
    mark = float(n - me)
    value = torch.tensor(
        [mark if local_bad else 0.0, mark if local_bad or spread_bad else 0.0],
        device=_reduce_device(),
    )
    torch.distributed.all_reduce(value, op=torch.distributed.ReduceOp.MAX)
    local, spread = (int(v) for v in value.tolist())
    got = local or spread
    return None if got == 0 else n - got
