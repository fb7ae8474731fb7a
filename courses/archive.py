"""An uploaded zip of notes, opened defensively (web process). Pure: no Django.

A course's author is trusted no more than a learner, so a zip is read as hostile input: its headers may lie
about sizes, its names may climb out of any folder, and it may hold another zip, a link or an encrypted
member. Every check happens before a byte is kept, and every read is bounded by what is left of the cap,
so a zip bomb costs at most the cap in memory whatever its headers say.
"""

from __future__ import annotations

import io
import stat
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import PurePosixPath

MAX_MEMBERS = 200
# Unpacked / packed. Markdown packs 3 to 5 times; a member or a whole zip packed 100 times or more is a bomb.
# Checked only past RATIO_FLOOR bytes: a small file of blank lines packs that well and harms nobody.
MAX_RATIO = 100
RATIO_FLOOR = 64 * 1024
ZIP_MAGIC = b"PK\x03\x04"
# Left out without a word: what archivers add on their own (macOS resource forks, Finder's folder files).
_NOISE = ("__MACOSX/", ".DS_Store", "Thumbs.db")


class ArchiveError(ValueError):
    """The zip cannot be used; the message names the archive and, where it is one member's fault, the member."""


@dataclass
class Unpacked:
    """What a zip holds: its members' (path, bytes) in archive order, and the members left out on purpose."""

    files: list[tuple[str, bytes]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def is_zip(name: str, data: bytes) -> bool:
    return data.startswith(ZIP_MAGIC) or name.lower().endswith(".zip")


def unpack(name: str, data: bytes, max_bytes: int) -> Unpacked:
    """Every member of the zip ``data`` (uploaded as ``name``), checked, within ``max_bytes`` unpacked in all.

    Steps: 1. open it (not a zip: refused); 2. judge the headers: member count, the declared total and ratio,
    each member's name, type and packing; 3. read each member with a bounded read, so a header that lies about
    a size gains nothing; 4. refuse a member that is itself a zip, whatever its name.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError):
        raise ArchiveError(f"{name}: is not a readable zip archive.") from None
    with archive:
        members = [info for info in archive.infolist() if not _is_noise(info.filename)]
        _check_headers(name, members, len(data), max_bytes)
        unpacked = Unpacked(skipped=[info.filename for info in archive.infolist() if _is_noise(info.filename)])
        left = max_bytes
        for info in members:
            if info.is_dir():
                continue
            content = _read(archive, info, name, left)
            left -= len(content)
            if content.startswith(ZIP_MAGIC):
                raise ArchiveError(f"{name}: {info.filename}: a zip inside the zip is refused; upload it on its own.")
            unpacked.files.append((info.filename, content))
    return unpacked


def _is_noise(member: str) -> bool:
    return member.startswith(_NOISE[0]) or PurePosixPath(member).name in _NOISE[1:]


def _check_headers(name: str, members: list[zipfile.ZipInfo], packed: int, max_bytes: int) -> None:
    if len(members) > MAX_MEMBERS:
        raise ArchiveError(f"{name}: holds {len(members)} files, over the limit of {MAX_MEMBERS}.")
    total = sum(info.file_size for info in members)
    if total > max_bytes:
        raise ArchiveError(f"{name}: would unpack to {total} bytes, over the {max_bytes} byte limit of an upload.")
    if total > RATIO_FLOOR and total > MAX_RATIO * max(packed, 1):
        raise ArchiveError(f"{name}: packs {total} bytes into {packed}: refused as a possible zip bomb.")
    for info in members:
        problem = _member_problem(info)
        if problem:
            raise ArchiveError(f"{name}: {info.filename}: {problem}")


def _member_problem(info: zipfile.ZipInfo) -> str:
    """Why this member may not be unpacked ("" when it may)."""
    member = info.filename
    parts = PurePosixPath(member).parts
    if "\\" in member or "\0" in member or member.startswith("/") or (len(member) > 1 and member[1] == ":"):
        return "an absolute path or a Windows path is refused; use relative paths with '/'."
    if ".." in parts:
        return "a path with '..' is refused (it would leave the course's folder)."
    if stat.S_ISLNK(info.external_attr >> 16):
        return "a symbolic link is refused."
    if info.flag_bits & 0x1:
        return "an encrypted file is refused."
    if member.lower().endswith(".zip"):
        return "a zip inside the zip is refused; upload it on its own."
    if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
        return f"packs {info.file_size} bytes into {info.compress_size}: refused as a possible zip bomb."
    return ""


def _read(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, left: int) -> bytes:
    """The member's bytes, never more than its header said nor than ``left`` (a lying header is refused)."""
    limit = min(info.file_size, left)
    try:
        with archive.open(info) as member:
            content = member.read(limit + 1)
    except (zipfile.BadZipFile, EOFError, OSError, NotImplementedError, RuntimeError, zlib.error) as exc:
        raise ArchiveError(f"{name}: {info.filename}: cannot be unpacked ({exc}).") from None
    if len(content) > limit:
        raise ArchiveError(f"{name}: {info.filename}: unpacks to more than its header says: refused.")
    return content
