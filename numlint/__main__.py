"""`python -m numlint`."""

from numlint.cli import main

raise SystemExit(main())
