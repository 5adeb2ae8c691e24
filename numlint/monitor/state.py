"""What the checks and the incident handling see of the monitor: a Protocol, so that they
depend on this interface and not on the Monitor class (which imports them)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import Tensor, nn

from numlint.monitor.events import Event, EventLog
from numlint.monitor.findings import Finding
from numlint.monitor.grads import ParamGroup
from numlint.monitor.hooks import FlagRecorder
from numlint.monitor.locate import ForwardState


class MonitorLike(Protocol):
    """The monitor's state and services a check may use (`numlint.monitor.monitor.Monitor`
    implements it)."""

    # configuration
    model: nn.Module
    optimizer: torch.optim.Optimizer | None
    scaler: Any
    action: str
    criterion: nn.Module | None
    grad_stats_every: int
    explosion: tuple[float, int, int]
    max_skips: int
    min_scale: float
    check_params: Any
    module_hooks: bool
    max_findings: int
    max_snapshots: int
    snapshot_path: Path | None
    log: EventLog
    handles: list[Any]
    rank: int
    world: int
    # the watched model
    names: list[str]
    name_of: dict[nn.Module, str]
    param_names: list[str]
    params: list[Tensor]
    param_ids: set[int]
    groups: list[ParamGroup]
    # per-step state
    step: int
    iteration: int
    failed: bool
    snapshot: Any
    last_grad_norm: float | None
    args: tuple[Any, ...] | None
    kwargs: dict[str, Any] | None
    rng: ForwardState | None
    grad_enabled: bool
    thread: int
    targets: tuple[Any, ...] | None
    output: Any
    output_flagged: bool
    backward_seen: bool
    criterion_call: tuple[Any, ...] | None
    backward_site: tuple[Any, int] | None
    loss: Tensor | None
    loss_value: float | None
    loss_finite: bool
    scaling: bool  # an enabled GradScaler is watched
    rec: FlagRecorder

    @property
    def paused(self) -> bool: ...
    @property
    def incident_open(self) -> bool: ...

    def check(self, point: Any) -> bool: ...
    def ignored(self, name: str) -> bool: ...
    def scaler_on(self) -> bool: ...
    def rerun_model(self) -> nn.Module | None: ...
    def paused_call(self, fn: Callable[..., Any], *args: Any, default: Any = None) -> Any: ...
    def param_findings(self, phase: str) -> list[Finding]: ...
    def locate_loss(self) -> dict[str, Any] | None: ...
    def output_grads(self) -> list[Tensor | None]: ...
    def fail(self, phase: str, findings: list[Finding]) -> None: ...
    def fail_events(self, events: list[Event]) -> None: ...
    def emit(self, event: Event) -> None: ...
    def emit_pending(self) -> None: ...
