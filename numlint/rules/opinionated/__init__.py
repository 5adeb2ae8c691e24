"""NUM9xx: opinionated rules, off by default."""
