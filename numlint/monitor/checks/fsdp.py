"""FSDP2 (`fully_shard`) gradients, flagged before their reduce-scatter, so a rank's own
non-finite gradient is told from one the reduce-scatter brought from another rank (the FSDP2
counterpart of `ddp`). The reduce-scatter itself is FSDP2's own, unchanged."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from numlint.monitor.checks._failures import LocalGradientFlags
from numlint.monitor.stats import flag


class ShardCheck(LocalGradientFlags):
    """Local gradients under FSDP2 (read with the step's other values, one reduction per
    reduce-scatter). Param groups with a custom reduce-scatter of their own are left alone."""

    PRIORITY = 45

    def start(self) -> None:
        self._flags: list[Tensor] = []
        self._saved: list[tuple[Any, Any]] = []
        self.active = False
        if self.mon.world == 1:
            return
        try:
            from torch.distributed.fsdp import FSDPModule
            from torch.distributed.fsdp._fully_shard._fsdp_collectives import (
                DefaultReduceScatter,
            )
        except ImportError:
            return
        check = self

        class FlaggingReduceScatter(DefaultReduceScatter):
            def __call__(self, output_tensor: Tensor, input_tensor: Tensor, *args: Any, **kw: Any):
                if not check.mon.paused:
                    check._flags.append(flag(input_tensor))
                return super().__call__(output_tensor, input_tensor, *args, **kw)

        comm = FlaggingReduceScatter()
        for module in self.mon.model.modules():
            if not isinstance(module, FSDPModule):
                continue
            state = module._get_fsdp_state()
            for group in getattr(state, "_fsdp_param_groups", []):
                old = getattr(group, "_reduce_scatter_comm", None)
                if type(old) is DefaultReduceScatter:
                    self._saved.append((group, old))
                    group._reduce_scatter_comm = comm
        self.active = bool(self._saved)

    def stop(self) -> None:
        for group, old in self._saved:
            group._reduce_scatter_comm = old
        self._saved = []


CHECK = ShardCheck
