"""NUM2xx: sqrt, division and normalisation."""
