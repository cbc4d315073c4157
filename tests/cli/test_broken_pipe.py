"""`atlas … | head`: a reader that stops reading ends the command quietly, not with "[Errno 32] Broken pipe"."""

import signal
import subprocess
import sys

from forum_atlas.cli.output import table
from tests.support.cli import REPO_ROOT


def test_a_closed_pipe_ends_the_command_without_an_error(database_url, tmp_path):
    env = {"PATH": "/usr/bin:/bin", "ATLAS_DATABASE_URL": database_url, "ATLAS_DATA_DIR": str(tmp_path),
           "HOME": str(tmp_path)}
    command = subprocess.Popen([sys.executable, "-m", "forum_atlas.cli.main", "db", "status"], cwd=REPO_ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    command.stdout.close()   # as `head` does once it has its lines: here before the first one is written
    _, err = command.communicate(timeout=120)
    assert command.returncode == 128 + signal.SIGPIPE
    assert err.decode() == ""   # neither "atlas: error: [Errno 32] Broken pipe" nor "Exception ignored …"


def test_a_line_break_in_a_cell_does_not_break_the_table():
    lines = table(["file", "outcome"], [("two\nlines.md", "stored"), ("tab\there.md", "empty")]).splitlines()
    assert lines[2:] == ["two\\nlines.md  stored", "tab\\there.md   empty"]
