"""`python -m harness cache info` and `python -m harness cache clear`: the stage cache's folder,
entries and size against its cap, or every entry removed (harness.stages.entries)."""
from __future__ import annotations

import argparse
import datetime
import json
import sys

from harness.files import display_path
from harness.project import tool_arguments
from harness.stages.entries import StageCache


def add_cache_commands(commands: argparse._SubParsersAction) -> None:
    cache = commands.add_parser("cache", help="the stage cache (--cache): what it holds, or empty it")
    verbs = cache.add_subparsers(dest="verb", required=True)
    sub = verbs.add_parser("info", parents=[tool_arguments()], help="its folder, entries, size and cap")
    sub.add_argument("--format", choices=("text", "json"), default="text")
    sub.set_defaults(run=info)
    sub = verbs.add_parser("clear", parents=[tool_arguments()], help="remove every entry")
    sub.set_defaults(run=clear)


def _cache(args: argparse.Namespace) -> StageCache:
    return StageCache.of(args.project.settings, lambda line: print(line, file=sys.stderr))


def info(args: argparse.Namespace) -> None:
    figures = _cache(args).info()
    if args.format == "json":
        print(json.dumps(figures, indent=1))
        return
    used = figures["oldest_use"]
    oldest = (", the least recently used "
              + datetime.datetime.fromtimestamp(used, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
              if used else "")
    print(f"{display_path(args.project.settings.cache_dir)}: {figures['entries']} entries, "
          f"{_size(figures['bytes'])} of {_size(figures['cap_bytes'])}{oldest} (--cache={args.project.settings.cache})")


def clear(args: argparse.Namespace) -> None:
    removed = _cache(args).clear()
    print(f"{display_path(args.project.settings.cache_dir)}: {removed} entries removed")


def _size(count: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count} B"
