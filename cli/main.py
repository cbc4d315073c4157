"""`atlas …` entry point. Each module in `cli/commands/` registers its own sub-commands, so a
command that needs no flow (status, verify, search) never pays Prefect's start-up."""

from __future__ import annotations

import argparse
import difflib
import importlib
import logging
import os
import pkgutil
import sys
import warnings

from forum_atlas.cli import commands
from forum_atlas.cli.output import OutputClosed, TerminalSafeStream, terminal_safe
from forum_atlas.cli.preflight import preflight
from forum_atlas.failures import is_expected, one_line
from forum_atlas.redaction import FILTER, redact
from forum_atlas.runtime.prefect_api import QUIET_CONSOLE


EXIT_OUTPUT_CLOSED = 141   # 128 + SIGPIPE: what a shell reports for a command the closed pipe stopped


def _prefect_defaults(verbose: bool) -> None:
    """Offline by default (PLATFORM.md): no analytics, no telemetry, and a generous start-up timeout
    for the shared local Prefect API that the first flow command of a Prefect home starts when no
    PREFECT_API_URL is set (90 s on a quiet machine, scaled by the load: runtime/startup.py). Flow and task runs log at INFO to the Prefect API (every run's Logs tab has its lines); the
    terminal shows Prefect's log lines only with --verbose (its console handler), so a failed command
    prints one line. Set before any handler imports Prefect, which reads them once."""
    defaults = {
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
        "PREFECT_LOGGING_LEVEL": "INFO",
    }
    for key, value in defaults.items():
        os.environ.setdefault(key, value)
    if verbose:   # asked for on this command line: it wins over a quiet terminal inherited from a parent atlas
        os.environ[QUIET_CONSOLE] = "DEBUG"
    else:
        os.environ.setdefault(QUIET_CONSOLE, "CRITICAL")


def _project_log(verbose: bool) -> None:
    """The project's own log lines (a kernel that would not build, a retried database start) on stderr at
    WARNING, INFO with --verbose, whatever Prefect does with its console handler."""
    project = logging.getLogger("forum_atlas")
    if not any(h.get_name() == "atlas-cli" for h in project.handlers):   # main() runs more than once in tests
        handler = logging.StreamHandler()
        handler.set_name("atlas-cli")
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        handler.addFilter(FILTER)
        project.addHandler(handler)
    project.setLevel(logging.INFO if verbose else logging.WARNING)
    project.propagate = False


class AtlasParser(argparse.ArgumentParser):
    """argparse with "did you mean" for a mistyped command or choice (every sub-command's parser is one too)."""

    def _check_value(self, action: argparse.Action, value) -> None:
        if action.choices is not None and isinstance(value, str) and value not in action.choices:
            if close := difflib.get_close_matches(value, [str(c) for c in action.choices], n=1):
                choices = ", ".join(map(repr, action.choices))
                raise argparse.ArgumentError(action, f"invalid choice: {value!r}; did you mean {close[0]!r}? "
                                                     f"(choose from {choices})")
        super()._check_value(action, value)


def _name_subcommands(parser: argparse.ArgumentParser) -> None:
    """A group of sub-commands is named by its sub-commands ({list,update}) in usage and errors, not by its dest."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            if action.metavar is None:
                action.metavar = "{" + ",".join(action.choices) + "}"
            for sub in action.choices.values():
                _name_subcommands(sub)


def build_parser() -> argparse.ArgumentParser:
    parser = AtlasParser(prog="atlas", description="Forum Atlas: evidence-grounded briefs and scoreable forecasts")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    groups = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        importlib.import_module(f"forum_atlas.cli.commands.{module.name}").register(groups)
    _name_subcommands(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    argv = sys.argv[1:] if argv is None else argv
    if problem := _undecodable_argument(argv):
        print(f"atlas: error: {problem}", file=sys.stderr)
        return 2   # argparse's status for a bad command line
    args = build_parser().parse_args(argv)
    _prefect_defaults(args.verbose)
    _project_log(args.verbose)
    stdout, sys.stdout = sys.stdout, TerminalSafeStream(sys.stdout)
    try:
        preflight(args)
        status = int(args.handler(args) or 0)
        sys.stdout.flush()   # a reader gone before the buffered end (`| head`) is found here, not at exit
        return status
    except KeyboardInterrupt:
        return 130
    except OutputClosed:
        _discard_output(stdout)
        return EXIT_OUTPUT_CLOSED
    except Exception as exc:  # a clear one-line error for humans; --verbose shows an unexpected one's traceback
        if args.verbose and not is_expected(exc):
            raise
        print(f"atlas: error: {terminal_safe(redact(one_line(exc)))}", file=sys.stderr)
        return 1
    finally:
        sys.stdout = stdout


def _discard_output(stdout) -> None:
    """Point standard output at /dev/null: what is still buffered for the closed pipe would otherwise fail again,
    as "Exception ignored … BrokenPipeError", when the interpreter flushes it at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):   # no file descriptor (a test's captured stream): nothing is flushed at exit
        pass


def _undecodable_argument(argv: list[str]) -> str | None:
    """What is wrong with the first argument that is not UTF-8 (Python keeps its bytes as lone surrogates,
    which nothing downstream can encode), or None."""
    for position, arg in enumerate(argv, start=1):
        if any("\udc80" <= ch <= "\udcff" for ch in arg):
            shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            return f'argument {position} ("{terminal_safe(shown)}") is not valid UTF-8; give it as UTF-8 text'
    return None


if __name__ == "__main__":
    sys.exit(main())
