"""`python -m harness`: the command-line tools (harness.tools.cli)."""
from harness.tools.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
