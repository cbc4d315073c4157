"""The README and docs/ stay true to the code: every `atlas …` command of their code blocks parses with the CLI's own
parser (built as `atlas` builds it, never run), every `python -m bench.X` / `python -m forum_atlas.X` names a module
that exists, every relative link resolves, every page of docs/ is reachable from the README, and the README stays
short (issue 40)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import shlex
from pathlib import Path

import pytest

from forum_atlas.cli.main import build_parser

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
README_MAX_LINES = 150

FENCE = re.compile(r"^(```|~~~)\s*(\w*)")
SHELL_LANGUAGES = {"", "sh", "shell", "bash", "console"}   # a fence's info string; ```text holds no commands
SHELL_OPERATORS = {"&&", "||", ";", "|", "&"}
REDIRECTIONS = {">", ">>", "<", "<<", ">&", "&>", ">|"}
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
MODULE = re.compile(r"python3?\s+-m\s+((?:bench|forum_atlas)(?:\.\w+)+)")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def code_blocks(text: str) -> list[str]:
    """The shell code blocks of a Markdown page: fenced ones (no language, or a shell's), and indented ones (4 spaces
    after a blank line)."""
    blocks, fenced, indented = [], None, None
    previous_blank, shell = True, True
    for line in text.splitlines():
        if fenced is not None:
            if FENCE.match(line):
                if shell:
                    blocks.append("\n".join(fenced))
                fenced = None
            else:
                fenced.append(line)
        elif fence := FENCE.match(line):
            fenced, shell = [], fence.group(2) in SHELL_LANGUAGES
        elif line.startswith("    ") and (previous_blank or indented is not None):
            indented = (indented or []) + [line[4:]]
        elif indented is not None and not line.strip():
            blocks.append("\n".join(indented))
            indented = None
        previous_blank = not line.strip()
    if indented:
        blocks.append("\n".join(indented))
    return blocks


def commands(block: str) -> list[list[str]]:
    """The simple commands of a shell block, as words: continuation lines joined, comments dropped, split at
    `&&`, `||`, `;`, `|`, `&`, redirections and leading NAME=value assignments removed, as a shell reads them.
    Raises ValueError for a line a shell could not read (an unclosed quote)."""
    found = []
    for line in block.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words: list[str] = []
        redirected = False
        for token in [*lexer, "&&"]:
            if token in REDIRECTIONS:
                redirected = True
            elif redirected and token not in SHELL_OPERATORS:
                redirected = False   # the redirection's file: not an argument
            elif token in SHELL_OPERATORS:
                while words and ASSIGNMENT.match(words[0]):
                    words.pop(0)
                if words:
                    found.append(words)
                words = []
            else:
                words.append(token)
    return found


def parse_error(argv: list[str]) -> str | None:
    """argparse's complaint about `atlas ARGV`, or None when the CLI accepts it."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            build_parser().parse_args(argv)
    except SystemExit as exit_:
        if exit_.code not in (0, None):   # 0: -h/--help, which is valid
            return stderr.getvalue().strip().splitlines()[-1] if stderr.getvalue().strip() else f"exit {exit_.code}"
    return None


def module_exists(name: str) -> bool:
    if name.startswith("bench."):
        path = REPO.joinpath(*name.split("."))
        return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:   # a parent package that does not exist
        return False


def problems(text: str, page: Path) -> list[str]:
    """What is wrong with a Markdown page's commands, modules and relative links (page names the file links start
    from)."""
    found = []
    for block in code_blocks(text):
        try:
            simple_commands = commands(block)
        except ValueError as error:
            found.append(f"{block.splitlines()[0]} …: {error}")
            continue
        for words in simple_commands:
            if Path(words[0]).name == "atlas":
                if error := parse_error(words[1:]):
                    found.append(f"{shlex.join(words)}: {error}")
    for name in sorted(set(MODULE.findall(text))):
        if not module_exists(name):
            found.append(f"python -m {name}: no such module")
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue   # a URL, or an anchor on the same page
        if not (page.parent / target.split("#")[0]).exists():
            found.append(f"link {target}: no such file")
    return found


def linked_pages(page: Path) -> set[Path]:
    return {(page.parent / target.split("#")[0]).resolve() for target in LINK.findall(page.read_text(encoding="utf-8"))
            if not re.match(r"^[a-z]+:", target) and not target.startswith("#") and target.endswith(".md")}


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(REPO).as_posix() for p in PAGES])
def test_every_command_module_and_link_is_valid(page: Path):
    assert problems(page.read_text(encoding="utf-8"), page) == []


def test_the_docs_hold_commands_to_check():
    """The extraction finds what the pages hold (so the test above cannot pass by finding nothing)."""
    atlas = [words for page in PAGES for block in code_blocks(page.read_text(encoding="utf-8"))
             for words in commands(block) if Path(words[0]).name == "atlas"]
    readme = [shlex.join(words) for block in code_blocks(README.read_text(encoding="utf-8")) for words in commands(block)]
    assert ".venv/bin/atlas demo" in readme and ".venv/bin/pytest" in readme
    assert len(atlas) >= 30
    assert {words[1] for words in atlas if words[1:]} >= {"ingest", "search", "ask", "forecast", "audit", "ops"}


def test_a_planted_bad_command_module_or_link_is_caught(tmp_path: Path):
    page = tmp_path / "page.md"
    text = ("Some prose.\n\n"
            "```sh\n"
            "atlas search \"fine\" --top-k 3\n"
            "ATLAS_EMBEDDER=hashed atlas ingest corpus.jsonl --no-such-flag 1 && echo done\n"
            "atlas forecast backtest series.csv --comparator > out.txt\n"
            "```\n\n"
            "    .venv/bin/atlas frobnicate\n\n"
            "Run `python -m bench.no_such_bench` and see [the page](missing.md).\n")
    found = problems(text, page)
    expected = [
        "atlas ingest corpus.jsonl --no-such-flag 1: atlas: error: unrecognized arguments: --no-such-flag 1",
        "atlas forecast backtest series.csv --comparator: atlas forecast backtest: error: argument --comparator: "
        "expected one argument",   # an unquoted > is the shell's redirection, not the comparator
        ".venv/bin/atlas frobnicate: atlas: error: argument COMMAND: invalid choice: 'frobnicate'",
        "python -m bench.no_such_bench: no such module",
        "link missing.md: no such file",
    ]
    assert len(found) == len(expected) and all(f.startswith(e) for f, e in zip(found, expected)), found


def test_every_docs_page_is_reachable_from_the_readme():
    reached, frontier = set(), {README.resolve()}
    while frontier:
        page = frontier.pop()
        reached.add(page)
        frontier |= {p for p in linked_pages(page) if p.exists() and p not in reached}
    unreached = [p.relative_to(REPO).as_posix() for p in PAGES if p.resolve() not in reached]
    assert unreached == []


def test_the_readme_is_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move detail into docs/"
