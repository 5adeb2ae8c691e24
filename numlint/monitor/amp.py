"""GradScaler awareness: see the loss it scales and tell skipped steps from divergence.

The scaler is instrumented by shadowing two bound methods on the *instance* (`scale` and
`update`); nothing global is patched and both are restored on exit. A step counts as skipped when
no optimizer step ran between two `update()` calls, which is exactly when GradScaler found an
inf/NaN gradient and did not call `optimizer.step()`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_MISSING = object()


class ScalerPatch:
    """Installs `on_scale(outputs)` and `on_update(scale_before, scale_after)` around a scaler."""

    def __init__(
        self,
        scaler: Any,
        on_scale: Callable[[Any], None],
        on_update: Callable[[float, float], None],
    ) -> None:
        self.scaler = scaler
        self._saved: dict[str, Any] = {}
        orig_scale = scaler.scale
        orig_update = scaler.update

        def scale(outputs: Any) -> Any:
            on_scale(outputs)
            return orig_scale(outputs)

        def update(new_scale: Any = None) -> None:
            before = self.current_scale()
            orig_update(new_scale)
            on_update(before, self.current_scale())

        for name, fn in (("scale", scale), ("update", update)):
            self._saved[name] = scaler.__dict__.get(name, _MISSING)
            setattr(scaler, name, fn)

    def enabled(self) -> bool:
        """False for a GradScaler built with enabled=False (it scales nothing, skips nothing)."""
        is_enabled = getattr(self.scaler, "is_enabled", None)
        return bool(is_enabled()) if callable(is_enabled) else True

    def current_scale(self) -> float:
        """The loss scale now (one host read)."""
        try:
            return float(self.scaler.get_scale())
        except Exception:
            return float("nan")

    def remove(self) -> None:
        """Put the scaler's own methods back."""
        for name, old in self._saved.items():
            if old is _MISSING:
                self.scaler.__dict__.pop(name, None)
            else:
                setattr(self.scaler, name, old)
        self._saved.clear()


class SkipTracker:
    """Tells a GradScaler overflow skip (an event) from divergence (an error): `max_skips`
    consecutive skipped steps, or a loss scale fallen below `min_scale`."""

    def __init__(self, max_skips: int = 10, min_scale: float = 1.0) -> None:
        self.max_skips = max_skips
        self.min_scale = min_scale
        self.consecutive = 0

    def stepped(self) -> None:
        """A step was taken: the run of skips is over."""
        self.consecutive = 0

    def skipped(self, scale_after: float) -> str | None:
        """Count one skip; return why this is divergence, or None."""
        self.consecutive += 1
        if self.consecutive >= self.max_skips:
            return f"{self.consecutive} consecutive skipped steps (max_skips={self.max_skips})"
        if scale_after < self.min_scale:
            return f"loss scale {scale_after:g} fell below min_scale={self.min_scale:g}"
        return None
