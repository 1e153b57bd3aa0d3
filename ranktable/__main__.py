"""`python -m ranktable` is the same as the `ranktable` command."""

from ranktable.cli import main

raise SystemExit(main())
