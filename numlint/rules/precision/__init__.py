"""NUM4xx: half precision and dtype."""
