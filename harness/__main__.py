"""`python -m harness`: the command-line tools (harness.tools.cli)."""
from harness.tools.cli import main

raise SystemExit(main())
