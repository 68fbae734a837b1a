"""`python -m harness servers [stop]`: this user's warm servers (--warm-server), each with its pid,
age and memory; or each stopped, its runs' workers with it."""
from __future__ import annotations

import argparse
import contextlib
import time

import psutil

from harness.controller import warm_server


def add_servers_command(commands: argparse._SubParsersAction) -> None:
    sub = commands.add_parser("servers", help="the warm servers kept between runs (--warm-server): list or stop them")
    sub.add_argument("verb", nargs="?", choices=("list", "stop"), default="list")
    sub.set_defaults(run=servers)


def servers(args: argparse.Namespace) -> None:
    found = warm_server.running()
    if args.verb == "stop":
        for proc, path in found:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.terminate()
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        psutil.wait_procs([proc for proc, _ in found], timeout=10)
        print(f"{len(found)} warm server{'s' * (len(found) != 1)} stopped")
        return
    for proc, path in found:
        with contextlib.suppress(psutil.NoSuchProcess):
            age = time.time() - proc.create_time()
            print(f"pid {proc.pid}, started {age / 60:.0f} min ago, {proc.memory_info().rss / 2**20:.0f} MiB: {path}")
    if not found:
        print("no warm server")
