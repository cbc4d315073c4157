"""`atlas …` entry point. Each module in `cli/commands/` registers its own sub-commands, so a
command that needs no flow (status, verify, search) never pays Prefect's start-up."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import pkgutil
import sys
import warnings

from forum_atlas.cli import commands

# Offline by default (PLATFORM.md): no analytics, no telemetry, and a generous start-up timeout for
# the temporary Prefect server that the first flow of a process starts when no PREFECT_API_URL is set.
for _key, _value in {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
    "PREFECT_LOGGING_LEVEL": "WARNING",
}.items():
    os.environ.setdefault(_key, _value)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="atlas", description="Forum Atlas: evidence-grounded briefs and scoreable forecasts")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    groups = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        importlib.import_module(f"forum_atlas.cli.commands.{module.name}").register(groups)
    return parser


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a clear one-line error for humans; --verbose shows the traceback
        if args.verbose:
            raise
        print(f"atlas: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
