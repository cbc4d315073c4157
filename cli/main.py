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
from forum_atlas.cli.output import TerminalSafeStream, terminal_safe


def _prefect_defaults(verbose: bool) -> None:
    """Offline by default (PLATFORM.md): no analytics, no telemetry, and a generous start-up timeout
    for the temporary Prefect server that the first flow of a process starts when no PREFECT_API_URL
    is set. Prefect's own log lines (a failed run's traceback among them) only with --verbose: a
    failed command prints one line. Set before any handler imports Prefect, which reads them once."""
    for key, value in {
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
        "PREFECT_LOGGING_LEVEL": "INFO" if verbose else "CRITICAL",
    }.items():
        os.environ.setdefault(key, value)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="atlas", description="Forum Atlas: evidence-grounded briefs and scoreable forecasts")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    groups = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        importlib.import_module(f"forum_atlas.cli.commands.{module.name}").register(groups)
    return parser


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    argv = sys.argv[1:] if argv is None else argv
    if problem := _undecodable_argument(argv):
        print(f"atlas: error: {problem}", file=sys.stderr)
        return 2   # argparse's status for a bad command line
    args = build_parser().parse_args(argv)
    _prefect_defaults(args.verbose)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    stdout, sys.stdout = sys.stdout, TerminalSafeStream(sys.stdout)
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a clear one-line error for humans; --verbose shows the traceback
        if args.verbose:
            raise
        print(f"atlas: error: {terminal_safe(_one_line(exc))}", file=sys.stderr)
        return 1
    finally:
        sys.stdout = stdout


def _undecodable_argument(argv: list[str]) -> str | None:
    """What is wrong with the first argument that is not UTF-8 (Python keeps its bytes as lone surrogates,
    which nothing downstream can encode), or None."""
    for position, arg in enumerate(argv, start=1):
        if any("\udc80" <= ch <= "\udcff" for ch in arg):
            shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            return f'argument {position} ("{terminal_safe(shown)}") is not valid UTF-8; give it as UTF-8 text'
    return None


def _one_line(exc: Exception) -> str:
    """The error and its notes in one line: a pydantic validation error as "field: problem; …"."""
    errors = getattr(exc, "errors", None)
    if type(exc).__name__ == "ValidationError" and callable(errors):
        return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg']}" for e in errors())
    # Notes carry what a failure left behind (e.g. what an ingest committed before it).
    return " ".join(" ".join([str(exc), *getattr(exc, "__notes__", [])]).split())


if __name__ == "__main__":
    sys.exit(main())
