"""NUM3xx: loss-function misuse."""
