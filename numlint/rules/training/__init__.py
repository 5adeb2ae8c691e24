"""NUM5xx: training-loop protocol."""
