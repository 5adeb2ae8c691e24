"""Two processes on the gloo backend (CPU): a NaN on one rank stops every rank at the same step."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

WORKER = textwrap.dedent(
    """
    import json, sys
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    import numlint

    rank, port, out, mode, wrap = (int(sys.argv[1]), *sys.argv[2:6])
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=2)
    torch.manual_seed(0)

    class SqrtAbs(nn.Module):  # the gradient of sqrt(|h|) at h == 0 is NaN
        def forward(self, h):
            return torch.sqrt(h.abs()) if mode == "backward" else torch.tanh(h)

    model = nn.Sequential(nn.Linear(4, 8, bias=False), SqrtAbs(), nn.Linear(8, 1))
    if wrap == "ddp":  # (a buffer: DDP's forward broadcasts it, so the re-run must not)
        model = DDP(nn.Sequential(*model, nn.BatchNorm1d(1)))
    else:  # FSDP2: every Linear and the whole model sharded
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        mesh = init_device_mesh("cpu", (2,))
        for m in model:
            if isinstance(m, nn.Linear):
                fully_shard(m, mesh=mesh)
        fully_shard(model, mesh=mesh)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    result = {"rank": rank, "raised": False, "steps": 0}
    try:
        with numlint.watch(model, opt, log=f"{out}/events.jsonl", static=False) as monitor:
            for step in range(6):
                x = torch.randn(4, 4)
                bad = rank == 1 and step == 3
                if bad and mode == "input":
                    x[0, 0] = float("nan")  # bad data on rank 1 only
                if bad and mode == "backward":
                    x = torch.zeros(4, 4)
                opt.zero_grad()
                loss = model(x).pow(2).mean()
                if bad and mode == "loss":
                    loss = loss * float("inf")  # an Inf born in rank 1's loss
                loss.backward()
                opt.step()
                result["steps"] += 1
    except numlint.NonFiniteError as exc:
        result.update(raised=True, event=exc.event)
    result["norms"] = [e["grad_norm"] for e in monitor.events if e["event"] == "step"]
    with open(f"{out}/result{rank}.json", "w") as fh:
        json.dump(result, fh)
    dist.barrier()  # both ranks done before either tears the group down
    dist.destroy_process_group()
    """
)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(tmp_path: Path, mode: str, wrap: str = "ddp") -> tuple[dict, dict]:
    """Run the worker on two ranks; their results."""
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    port = str(free_port())
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(rank), port, str(tmp_path), mode, wrap],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in (0, 1)
    ]
    outputs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=150)
            outputs.append(out)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, out in zip(procs, outputs, strict=True):
        assert p.returncode == 0, out
    r0 = json.loads((tmp_path / "result0.json").read_text())
    r1 = json.loads((tmp_path / "result1.json").read_text())
    return r0, r1


def test_nan_on_one_rank_stops_both_ranks_at_the_same_step(tmp_path: Path) -> None:
    r0, r1 = run_ranks(tmp_path, "input")
    assert r0["raised"] and r1["raised"]
    assert r0["steps"] == r1["steps"] == 3  # both stopped in step 3's forward
    assert r1["event"]["event"] == "nonfinite" and r1["event"]["rank"] == 1
    assert r1["event"]["module"] == "<input>" and r1["event"]["step"] == 3
    assert r0["event"]["event"] == "nonfinite_remote" and r0["event"]["rank"] == 0
    assert r0["event"]["source_rank"] == 1 and r0["event"]["step"] == 3
    # one log per rank: rank 0 keeps the name, rank 1 gets a suffix
    lines1 = (tmp_path / "events.rank1.jsonl").read_text().splitlines()
    assert any(json.loads(line)["rank"] == 1 for line in lines1)
    lines0 = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [e["step"] for e in lines0 if e["event"] == "step"] == [0, 1, 2]


@pytest.mark.parametrize(
    ("wrap", "mode", "phase", "module"),
    [
        ("ddp", "loss", "loss", "<loss>"),
        ("ddp", "backward", "backward", "module.1"),
        ("fsdp2", "loss", "loss", "<loss>"),
        ("fsdp2", "backward", "grad", "0.weight"),
    ],
)
def test_every_rank_names_the_rank_where_the_gradient_went_bad(
    tmp_path: Path, wrap: str, mode: str, phase: str, module: str
) -> None:
    # The all-reduce (DDP) or reduce-scatter (FSDP2) spreads rank 1's non-finite gradient to
    # rank 0 before optimizer.step.
    if wrap == "fsdp2":
        pytest.importorskip("torch.distributed.fsdp", reason="FSDP2 needs a newer torch")
    r0, r1 = run_ranks(tmp_path, mode, wrap)
    assert r0["raised"] and r1["raised"] and r0["steps"] == r1["steps"] == 3
    assert r1["event"]["event"] == "nonfinite" and r1["event"]["rank"] == 1
    assert r1["event"]["phase"] == phase and r1["event"]["module"] == module
    assert r1["event"]["origin"] is True and r1["event"]["step"] == 3
    assert r0["event"]["event"] == "nonfinite_remote" and r0["event"]["source_rank"] == 1
    assert r0["norms"] and r0["norms"] == r1["norms"]  # the whole gradient's norm on every rank
