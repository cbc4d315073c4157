"""Building the native BM25 kernel's files (`atlas_bm25`, sql/native/) for a PostgreSQL server on
this machine: the server's own PGXS, `make` and a C compiler. `store.native` decides when to build
and installs the extension in the database; this module only runs the toolchain and places files.

`make PG_CONFIG=<the server's pg_config> CC=<compiler>` and `make install DESTDIR=<staging>` run in a
temporary copy of sql/native (the package folder may be read-only); the staged files then replace the
installed ones atomically (a backend never loads half a library), library first, control file last.
The server's CFLAGS come from its build machine, whose compiler may know warnings this one does not:
such -W flags are dropped (and said so). A stamp beside the control file records what was built, so
a later install compiles only when the sources, the compiler or the server changed, or the library
is gone.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from forum_atlas.resources import sql_folder

EXTENSION = "atlas_bm25"
MIN_SERVER_VERSION_NUM = 150000  # InitMaterializedSRF; bm25_top_k.c refuses older headers with #error
_STAMP = f"{EXTENSION}.build"  # beside the control file: what the installed files were built from
_LIBRARY_SUFFIXES = (".so", ".dylib")


class KernelBuildError(RuntimeError):
    """The build refused; the message carries make's and the compiler's output."""


# --- the sources ------------------------------------------------------------------------------------


def source_dir() -> Path:
    return sql_folder() / "native"


@dataclass(frozen=True)
class Sources:
    folder: Path
    default_version: str
    files: tuple[Path, ...]  # everything the build reads or installs

    @property
    def control(self) -> Path:
        return self.folder / f"{EXTENSION}.control"

    @property
    def scripts(self) -> tuple[Path, ...]:
        return tuple(p for p in self.files if p.suffix == ".sql")

    def digest(self, *context: str) -> str:
        h = hashlib.sha256()
        for path in self.files:
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        for part in context:
            h.update(part.encode() + b"\0")
        return h.hexdigest()


def read_sources(folder: Path | None = None) -> Sources:
    folder = Path(folder) if folder else source_dir()
    control = folder / f"{EXTENSION}.control"
    if not control.is_file():
        raise KernelBuildError(f"the kernel's extension sources are incomplete: {control} is missing")
    match = re.search(r"^\s*default_version\s*=\s*'([^']+)'", control.read_text(), re.MULTILINE)
    if not match:
        raise KernelBuildError(f"{control} names no default_version")
    files = sorted(p for p in folder.iterdir() if p.is_file() and (
        p.name in ("Makefile", control.name) or p.suffix in (".c", ".h")
        or (p.suffix == ".sql" and p.name.startswith(f"{EXTENSION}--"))))
    return Sources(folder, match.group(1), tuple(files))


def available_version() -> str | None:
    try:
        return read_sources().default_version
    except (KernelBuildError, OSError):
        return None


# --- the server and this machine ------------------------------------------------------------------


@dataclass(frozen=True)
class Server:
    role: str
    superuser: bool
    version_num: int
    version: str
    config: dict[str, str]  # the pg_config view: readable by superusers only (empty otherwise)

    @property
    def pkglibdir(self) -> Path:
        return Path(self.config["PKGLIBDIR"])

    @property
    def extension_dir(self) -> Path:
        return Path(self.config["SHAREDIR"]) / "extension"

    @property
    def pg_config(self) -> Path:
        return Path(self.config["BINDIR"]) / "pg_config"


@dataclass(frozen=True)
class Toolchain:
    pg_config: Path
    make: str
    compiler: str


def find_compiler() -> str | None:
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")


def _make() -> str | None:
    return shutil.which("make") or shutil.which("gmake")


def toolchain(server: Server) -> tuple[Toolchain | None, str]:
    """What builds the kernel for this server, or why nothing here can ("" if something can)."""
    if not server.superuser:
        return None, (f"the database role {server.role} is not a superuser (installing a C extension "
                      "needs one; managed PostgreSQL services offer none)")
    if server.version_num < MIN_SERVER_VERSION_NUM:
        return None, (f"PostgreSQL {server.version} is older than 15, which the kernel needs "
                      "(it returns rows through InitMaterializedSRF, new in 15)")
    pg_config = server.pg_config
    if not (pg_config.is_file() and os.access(pg_config, os.X_OK)):
        return None, (f"the server's pg_config is not on this machine ({pg_config}): "
                      "the server runs elsewhere, or without its development files")
    pgxs = Path(server.config.get("PGXS") or "(none)")
    if not pgxs.is_file():
        return None, (f"the server's PGXS build files are not on this machine ({pgxs}; "
                      "a packaged server ships them in its -dev/-devel package)")
    include = Path(server.config.get("INCLUDEDIR-SERVER") or "(none)")
    if not (include / "postgres.h").is_file():
        return None, f"the server's headers are not on this machine ({include})"
    make = _make()
    if make is None:
        return None, "no make on this machine (PGXS builds need GNU make)"
    compiler = find_compiler()
    if compiler is None:
        return None, "no C compiler on this machine (set CC, or install cc)"
    for directory in (server.pkglibdir, server.extension_dir):
        if not (directory.is_dir() and os.access(directory, os.W_OK)):
            return None, f"the server's directory {directory} is not writable by this user"
    return Toolchain(pg_config, make, compiler), ""


# --- building and installing the files -------------------------------------------------------------


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _run(command: list[str], cwd: Path) -> None:
    done = subprocess.run(command, check=False, cwd=cwd, capture_output=True, text=True,
                          env=os.environ | {"LC_ALL": "C"})
    if done.returncode != 0:
        shown = " ".join(shlex.quote(part) for part in command)
        raise KernelBuildError(f"`{shown}` failed (exit {done.returncode}):\n{_tail(done.stdout + done.stderr)}")


def _usable_cflags(compiler: str, cflags: str, workdir: Path) -> tuple[list[str], list[str]]:
    """The server's CFLAGS minus the warning flags this compiler does not know (the server was built
    elsewhere, maybe by a newer compiler): (kept, dropped). A compiler that cannot build a one-line
    file is an error here, with its output."""
    probe = workdir / "probe.c"
    probe.write_text("int atlas_bm25_probe;\n")
    command = [*shlex.split(compiler), "-c", str(probe), "-o", str(workdir / "probe.o")]

    def compiles(flags: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run([*command[:1], *flags, *command[1:]], check=False, capture_output=True, text=True,
                              env=os.environ | {"LC_ALL": "C"})

    plain = compiles([])
    if plain.returncode != 0:
        raise KernelBuildError(f"the C compiler {compiler} cannot compile a one-line file:\n"
                               f"{_tail(plain.stdout + plain.stderr)}")
    flags = shlex.split(cflags)
    if compiles(flags).returncode == 0:
        return flags, []
    kept = [f for f in flags if not f.startswith("-W") or compiles([f]).returncode == 0]
    return kept, [f for f in flags if f not in kept]


def _check_pg_config(server: Server, tool: Toolchain) -> None:
    """The pg_config found must describe the running server, not another installation."""
    done = subprocess.run([str(tool.pg_config), "--version", "--pkglibdir"], check=False, capture_output=True,
                          text=True)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or len(lines) != 2:
        raise KernelBuildError(f"{tool.pg_config} failed: {_tail(done.stdout + done.stderr, 5)}")
    version, pkglibdir = lines
    if version != server.config["VERSION"] or Path(pkglibdir).resolve() != server.pkglibdir.resolve():
        raise KernelBuildError(f"{tool.pg_config} describes {version} at {pkglibdir}, not the running server "
                               f"({server.config['VERSION']} at {server.pkglibdir})")


def _build_id(sources: Sources, server: Server, tool: Toolchain) -> str:
    return sources.digest(server.config["VERSION"], str(server.pkglibdir.resolve()), tool.compiler)


def _installed_library(server: Server) -> Path | None:
    for suffix in _LIBRARY_SUFFIXES:
        if (server.pkglibdir / f"{EXTENSION}{suffix}").is_file():
            return server.pkglibdir / f"{EXTENSION}{suffix}"
    return None


def build_is_current(sources: Sources, server: Server, tool: Toolchain) -> bool:
    """Whether the server's directories hold exactly what these sources build with this compiler."""
    try:
        stamp = json.loads((server.extension_dir / _STAMP).read_text())
    except (OSError, ValueError):
        return False
    if stamp.get("build_id") != _build_id(sources, server, tool) or _installed_library(server) is None:
        return False
    for source in (sources.control, *sources.scripts):
        installed = server.extension_dir / source.name
        if not installed.is_file() or installed.read_bytes() != source.read_bytes():
            return False
    return True


def _replace_atomically(source: Path, target: Path) -> None:
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    try:
        shutil.copyfile(source, temporary)
        shutil.copymode(source, temporary)  # as PGXS installed it: 755 for the library, 644 for data
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def build_and_install_files(sources: Sources, server: Server, tool: Toolchain) -> tuple[list[Path], list[str]]:
    """`make` + `make install` (staged) from a temporary copy of the sources, then the staged files
    into the server's directories. Returns (files installed, notes)."""
    _check_pg_config(server, tool)
    with tempfile.TemporaryDirectory(prefix="atlas-bm25-build-") as tmp:
        work = Path(tmp)
        src, stage = work / "src", work / "stage"
        src.mkdir()
        for path in sources.files:
            shutil.copyfile(path, src / path.name)
        cflags, dropped = _usable_cflags(tool.compiler, server.config.get("CFLAGS", ""), work)
        make = [tool.make, f"PG_CONFIG={tool.pg_config}", f"CC={tool.compiler}", f"CFLAGS={' '.join(cflags)}"]
        _run(make, src)
        _run([*make, "install", f"DESTDIR={stage}"], src)
        allowed = {server.pkglibdir.resolve(), server.extension_dir.resolve()}
        staged = [p for p in stage.rglob("*") if p.is_file()]
        # The library first and the control file last: a concurrent CREATE EXTENSION never sees a
        # default_version whose script or library is not there yet.
        staged.sort(key=lambda p: (p.suffix not in _LIBRARY_SUFFIXES, p.suffix == ".control", p.name))
        installed = []
        for path in staged:
            target = Path("/", path.relative_to(stage))
            if target.parent.resolve() not in allowed:
                raise KernelBuildError(f"`make install` wanted to write {target}, outside the server's "
                                       "library and extension directories")
            _replace_atomically(path, target)
            installed.append(target)
    record = {"build_id": _build_id(sources, server, tool), "version": sources.default_version,
              "compiler": tool.compiler, "server": server.config["VERSION"], "dropped_cflags": dropped,
              "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    with tempfile.TemporaryDirectory(prefix="atlas-bm25-stamp-") as tmp:
        stamp = Path(tmp) / _STAMP
        stamp.write_text(json.dumps(record, indent=2) + "\n")
        stamp.chmod(0o644)
        _replace_atomically(stamp, server.extension_dir / _STAMP)
    notes = [f"dropped {flag} from the server's CFLAGS (unknown to {tool.compiler})" for flag in dropped]
    return installed, notes


def remove_old_builds(server: Server) -> list[str]:
    """The libraries the pre-extension builder left in the server's library directory."""
    notes = []
    for suffix in _LIBRARY_SUFFIXES:
        for path in sorted(server.pkglibdir.glob(f"{EXTENSION}_*{suffix}")):
            try:
                path.unlink()
                notes.append(f"removed the pre-extension library {path}")
            except FileNotFoundError:
                pass
            except OSError as exc:
                notes.append(f"could not remove the pre-extension library {path}: {exc}")
    return notes
