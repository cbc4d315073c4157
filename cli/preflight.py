"""The checks every command's input passes before the database or Prefect starts (forum_atlas.preflight): a bad
path, an empty folder, a data directory that cannot hold the database, a question with no searchable word are
refused at once. The checks import neither Prefect nor a database driver."""

from __future__ import annotations

import argparse
from pathlib import Path

from forum_atlas.config import settings_from_env
from forum_atlas.preflight import check_data_dir, check_ingest_path, check_question


def preflight(args: argparse.Namespace) -> None:
    """Raise InputError/PreflightError for input the command would refuse only after its start-up; an ingest's
    `args.format` becomes the detected format."""
    settings = settings_from_env()
    if not settings.database_url:   # the embedded database lives in the data directory
        check_data_dir(settings.data_dir)
    if args.command == "ingest":
        args.format = check_ingest_path(Path(args.path), args.format)
    elif args.command == "ask":
        check_question(args.question)
