"""Bounded reading of ZIP containers (.docx and any other zip-based format), before any parser sees them.

A ZIP says in its directory how large each member is, and a parser (python-docx, lxml) believes it: a 3.4 MB
.docx whose `document.xml` expands to 1.18 GB grew a run to 16 GB and the kernel killed it. So the directory
is read first, within a byte limit of its own, and refused when it promises more than `max_expanded_bytes` in
all, more than `max_ratio` times a member's compressed size, or more than MAX_MEMBERS members; then every
member is decompressed once, as a stream into nothing, counting what comes out, and refused at the first byte
past the same limits (a directory that lies about a size is caught there, or by the CRC zipfile checks at its
end). Memory stays at one chunk; the time is that of inflating at most `max_expanded_bytes`.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path

from forum_atlas.ingestion.documents.model import DocumentError

# Real documents: a 600-page report's document.xml is ~20 MB; XML compresses 5–20 times, 50 at most in tables
# of repeated cells. A deflate bomb reaches ~1,000.
DEFAULT_MAX_EXPANDED_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_RATIO = 100
RATIO_FLOOR_BYTES = 1024 * 1024   # a member that expands to less is never refused for its ratio (tiny XML parts)
MAX_MEMBERS = 10_000
MAX_DIRECTORY_BYTES = 4 * 1024 * 1024
_CHUNK = 1024 * 1024
_END_RECORD = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"
_END_SEARCH = 22 + 65535   # the end record and the longest comment a ZIP may have


def _directory_extent(path: Path) -> tuple[int, int]:
    """(members, bytes) of the central directory, from the end records alone: zipfile would read the whole
    directory into objects before anyone could count it."""
    with path.open("rb") as handle:
        size = handle.seek(0, 2)
        start = max(size - _END_SEARCH, 0)
        handle.seek(start)
        tail = handle.read()
        at = tail.rfind(_END_RECORD)
        if at < 0 or len(tail) - at < 22:
            raise DocumentError("corrupt", "corrupt ZIP container: no end-of-directory record")
        members, directory_bytes = struct.unpack("<HI", tail[at + 10:at + 16])
        if members != 0xFFFF and directory_bytes != 0xFFFFFFFF:
            return members, directory_bytes
        locator = tail[at - 20:at] if at >= 20 else b""
        if not locator.startswith(_ZIP64_LOCATOR):
            raise DocumentError("corrupt", "corrupt ZIP container: a ZIP64 size without its ZIP64 record")
        (record_at,) = struct.unpack("<Q", locator[8:16])
        handle.seek(record_at)
        record = handle.read(56)
    if len(record) < 56 or not record.startswith(b"PK\x06\x06"):
        raise DocumentError("corrupt", "corrupt ZIP container: its ZIP64 record is missing")
    members, directory_bytes = struct.unpack("<QQ", record[32:48])
    return members, directory_bytes


def _limit_error(name: str, expanded: int, compressed: int, total: int, max_expanded_bytes: int,
                 max_ratio: int) -> DocumentError | None:
    if total > max_expanded_bytes:
        return DocumentError("too_large", f"above the expanded-size limit: its parts expand to more than "
                                          f"{max_expanded_bytes:,} bytes ({name} at {total:,})")
    if expanded > RATIO_FLOOR_BYTES and expanded > max_ratio * max(compressed, 1):
        return DocumentError("suspicious", f"suspicious ZIP container (a decompression bomb?): {name} expands "
                                           f"{expanded // max(compressed, 1):,} times its {compressed:,} compressed "
                                           f"bytes (at most {max_ratio} is read)")
    return None


def check_zip(path: Path, *, max_expanded_bytes: int = DEFAULT_MAX_EXPANDED_BYTES,
              max_ratio: int = DEFAULT_MAX_RATIO) -> set[str]:
    """The names of the members of a ZIP that decompresses within the limits; DocumentError otherwise
    (`too_large`, `suspicious`, `corrupt`, `encrypted`, `unsupported`)."""
    members, directory_bytes = _directory_extent(path)
    if members > MAX_MEMBERS or directory_bytes > MAX_DIRECTORY_BYTES:
        raise DocumentError("suspicious", f"suspicious ZIP container: {members:,} members in a {directory_bytes:,}-byte "
                                          f"directory (at most {MAX_MEMBERS:,} members are read)")
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            declared = 0
            for info in infos:   # what the directory promises, before a byte is inflated
                declared += info.file_size
                if error := _limit_error(info.filename, info.file_size, info.compress_size, declared,
                                         max_expanded_bytes, max_ratio):
                    raise error
            total = 0
            for info in infos:   # what the members hold, counted as they inflate
                expanded = 0
                with archive.open(info) as member:
                    while chunk := member.read(_CHUNK):
                        expanded += len(chunk)
                        total += len(chunk)
                        if error := _limit_error(info.filename, expanded, info.compress_size, total,
                                                 max_expanded_bytes, max_ratio):
                            raise error
            return {info.filename for info in infos}
    except RuntimeError as exc:   # zipfile: "File … is encrypted, password required for extraction"
        raise DocumentError("encrypted", f"encrypted ZIP container: {exc}") from None
    except NotImplementedError as exc:   # a compression method zipfile does not know (deflate64, …)
        raise DocumentError("unsupported", f"unsupported ZIP container: {exc}") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise DocumentError("corrupt", f"corrupt ZIP container: {exc}") from None
