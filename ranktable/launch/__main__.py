"""`python -m ranktable.launch ...` is `ranktable launch ...` without the rest of the CLI."""

from ranktable.launch.launcher import main

raise SystemExit(main())
