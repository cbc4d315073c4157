"""Applied migrations are immutable: sql/migrations/MIGRATIONS.sha256 pins every numbered migration's checksum
(the one forum.schema_migrations records), so an edit fails here before it reaches a database that
would refuse it."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from forum_atlas.store import migrations
from forum_atlas.store.migrations import CHECKSUMS, MigrationError

RULE = ("applied migrations are never edited: a fix goes in a new numbered file, and a new file's line is "
        "appended with `python -m forum_atlas.store.migrations checksum sql/migrations/NNN_name.sql`")


def _listed(folder: Path) -> dict[str, str]:
    listed = {}
    for number, line in enumerate((folder / CHECKSUMS).read_text(encoding="utf-8").splitlines(), 1):
        digest, sep, name = line.partition("  ")
        assert sep and len(digest) == 64 and name, f"{CHECKSUMS}:{number}: expected `<sha256>  <file>`, got {line!r}"
        assert name not in listed, f"{CHECKSUMS}: {name} is listed twice"
        listed[name] = digest
    return listed


def checksum_problems(folder: Path) -> list[str]:
    listed = _listed(folder)
    found = {m.filename: m.checksum for m in migrations.discover(folder)}
    problems = []
    if changed := sorted(name for name in found.keys() & listed.keys() if found[name] != listed[name]):
        problems.append(f"{changed} changed since their lines in sql/migrations/{CHECKSUMS} were written (undo the edit)")
    if unlisted := sorted(found.keys() - listed.keys()):
        problems.append(f"{unlisted} not listed in sql/migrations/{CHECKSUMS}")
    if missing := sorted(listed.keys() - found.keys()):
        problems.append(f"{missing} listed in sql/migrations/{CHECKSUMS} but missing from sql/migrations/")
    return problems


def test_every_migration_is_listed_with_its_checksum():
    problems = checksum_problems(migrations.sql_dir() / "migrations")
    assert not problems, "; ".join(problems) + f". {RULE}"


def test_an_edited_an_unlisted_and_a_missing_migration_are_each_caught(tmp_path):
    folder = tmp_path / "migrations"
    shutil.copytree(migrations.sql_dir() / "migrations", folder)
    assert checksum_problems(folder) == []
    first, last = min(folder.glob("[0-9]*.sql")), max(folder.glob("[0-9]*.sql"))
    first.write_text(first.read_text(encoding="utf-8") + "-- a late fix\n", encoding="utf-8")
    (folder / "999_new.sql").write_text("SELECT 1;\n", encoding="utf-8")
    last.unlink()
    assert checksum_problems(folder) == [
        f"['{first.name}'] changed since their lines in sql/migrations/{CHECKSUMS} were written (undo the edit)",
        f"['999_new.sql'] not listed in sql/migrations/{CHECKSUMS}",
        f"['{last.name}'] listed in sql/migrations/{CHECKSUMS} but missing from sql/migrations/",
    ]


def test_the_checksum_command_appends_a_new_migration_once(tmp_path):
    listing = tmp_path / CHECKSUMS
    listing.write_text("0" * 64 + "  001_first.sql\n", encoding="utf-8")
    new = tmp_path / "002_second.sql"
    new.write_text("CREATE TABLE forum.second (x int);\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "forum_atlas.store.migrations", "checksum", str(new)],
                          check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    line = f"{migrations.Migration(2, new.name, new.read_text(encoding='utf-8')).checksum}  002_second.sql"
    assert done.stdout.strip() == line
    assert listing.read_text(encoding="utf-8") == "0" * 64 + "  001_first.sql\n" + line + "\n"
    with pytest.raises(MigrationError, match="already in"):
        migrations.append_checksum(new)
    with pytest.raises(MigrationError, match="not a migration file"):
        migrations.append_checksum(tmp_path / "notes.sql")
    assert migrations.main(["checksum", str(new)]) == 1 and migrations.main([]) == 2
