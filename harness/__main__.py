"""`python -m harness`: the command-line tools (harness.cli)."""
import sys

try:
    from harness.cli import main
except ModuleNotFoundError as missing:   # an interpreter the harness was not installed into
    sys.exit(f"python -m harness: {missing.name} is not installed for {sys.executable}; install the harness "
             f"with its dependencies (pip install -e . in the checkout) or run the interpreter of the venv "
             f"that has it")

if __name__ == "__main__":
    raise SystemExit(main())
