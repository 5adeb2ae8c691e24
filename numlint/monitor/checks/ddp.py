"""DDP gradient buckets, flagged before their all-reduce (a communication hook), so a rank's
own non-finite gradient is told from one the all-reduce brought from another rank: every rank
then names the rank where it began."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from numlint.monitor.checks._failures import LocalGradientFlags
from numlint.monitor.stats import flag


class BucketCheck(LocalGradientFlags):
    """Local gradients under DDP (read with the step's other values, one reduction per
    bucket). Skipped when the model has a communication hook of its own already."""

    PRIORITY = 40

    def start(self) -> None:
        self._flags: list[Tensor] = []
        from torch.nn.parallel import DistributedDataParallel

        model = self.mon.model
        if not isinstance(model, DistributedDataParallel) or self.mon.world == 1:
            self.active = False
            return
        box = getattr(model, "_numlint_comm_hook", None)
        if box is not None:  # installed by an earlier monitor: point it here
            box[0] = self
            return
        if getattr(model, "_comm_hooks", None):
            self.active = False
            return
        box = [self]
        group = getattr(model, "process_group", None)
        scale = 1.0 / (group.size() if group is not None else self.mon.world)

        def hook(state, bucket):  # (DDP checks the annotations: none, or its own types)
            buf = bucket.buffer()
            check = box[0]
            if check is not None and not check.mon.paused:
                check._flags.append(flag(buf))
            # DDP's own reduction, operation for operation (results stay bit-identical): a
            # multiplication by 1 / world size, then an all-reduce sum.
            buf.mul_(scale)
            work = torch.distributed.all_reduce(buf, group=group, async_op=True)
            return work.get_future().then(lambda fut: fut.value()[0])

        model.register_comm_hook(None, hook)
        model._numlint_comm_hook = box  # type: ignore[assignment]

    def stop(self) -> None:
        box: Any = getattr(self.mon.model, "_numlint_comm_hook", None)
        if box is not None and box[0] is self:
            box[0] = None


CHECK = BucketCheck
