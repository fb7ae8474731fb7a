"""The zip of notes an editor uploads, opened as hostile input (courses.archive): every trick is refused with a
message that names it, and nothing is kept from a refused zip."""

from __future__ import annotations

import io
import random
import stat
import zipfile

import pytest

from courses.archive import MAX_MEMBERS, ArchiveError, unpack

CAP = 1024 * 1024


def make_zip(members: dict[str, bytes], *, compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def refused(data: bytes, match: str, cap: int = CAP) -> None:
    with pytest.raises(ArchiveError, match=match):
        unpack("course.zip", data, cap)


def test_it_unpacks_a_course_folder_in_archive_order() -> None:
    data = make_zip({"tamers/autograd.md": b"# A\n", "tamers/cards/autograd.toml": b"", "tamers/": b""})
    unpacked = unpack("course.zip", data, CAP)
    assert unpacked.files == [("tamers/autograd.md", b"# A\n"), ("tamers/cards/autograd.toml", b"")]


def test_it_leaves_out_what_archivers_add_on_their_own() -> None:
    data = make_zip({"a.md": b"# A\n", "__MACOSX/._a.md": b"\0\x05", "x/.DS_Store": b"\0"})
    unpacked = unpack("course.zip", data, CAP)
    assert [name for name, _ in unpacked.files] == ["a.md"]
    assert unpacked.skipped == ["__MACOSX/._a.md", "x/.DS_Store"]


def test_it_refuses_what_is_not_a_zip() -> None:
    refused(b"PK\x03\x04 but no more", "is not a readable zip archive")


def test_it_refuses_too_many_members() -> None:
    refused(make_zip({f"n{i}.md": b"# n\n" for i in range(MAX_MEMBERS + 1)}), f"over the limit of {MAX_MEMBERS}")


def test_it_refuses_a_zip_that_unpacks_over_the_cap_by_its_headers() -> None:
    refused(make_zip({"a.md": b"a" * 2000}), "would unpack to 2000 bytes, over the 1000 byte limit", cap=1000)


def test_it_refuses_a_zip_bomb_by_its_ratio() -> None:
    bomb = make_zip({"bomb.md": b"\n" * (900 * 1024)})
    refused(bomb, "refused as a possible zip bomb")


def test_it_refuses_a_member_that_packs_like_a_bomb_among_others_that_do_not() -> None:
    noise = random.Random(7).randbytes(100 * 1024)  # does not pack: the zip as a whole packs about 10 times
    refused(make_zip({"noise.md": noise, "bomb.md": b"\n" * (900 * 1024)}), "bomb.md: packs")


def test_it_refuses_a_zip_of_small_members_that_pack_like_a_bomb_together() -> None:
    members = {f"n{i}.md": b"\n" * (60 * 1024) for i in range(15)}  # each under the floor a member is judged at
    refused(make_zip(members), "course.zip: packs")


def test_it_refuses_a_header_that_lies_about_a_member_size() -> None:
    data = bytearray(make_zip({"a.md": b"x" * 5000}, compression=zipfile.ZIP_STORED))
    # The central directory's uncompressed size says 10; the member holds 5000 (a bounded read notices).
    offset = data.rfind(b"PK\x01\x02")
    data[offset + 24 : offset + 28] = (10).to_bytes(4, "little")
    refused(bytes(data), "cannot be unpacked|more than its header says")


@pytest.mark.parametrize(
    ("member", "why"),
    [
        ("../escape.md", "'\\.\\.' is refused"),
        ("notes/../../escape.md", "'\\.\\.' is refused"),
        ("/etc/passwd.md", "an absolute path"),
        ("C:/notes/a.md", "an absolute path"),
        ("notes\\a.md", "a Windows path"),
        ("inner.zip", "a zip inside the zip"),
    ],
)
def test_it_refuses_names_that_leave_the_folder_and_nested_zips(member: str, why: str) -> None:
    refused(make_zip({member: b"# x\n"}), why)


def test_it_refuses_a_zip_inside_whatever_its_name() -> None:
    refused(make_zip({"notes.md": make_zip({"a.md": b"# a\n"})}), "a zip inside the zip")


def test_it_refuses_a_symbolic_link() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo("link.md")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(info, "/etc/passwd")
    refused(buffer.getvalue(), "a symbolic link is refused")


def test_it_refuses_an_encrypted_member() -> None:
    data = bytearray(make_zip({"a.md": b"# a\n"}, compression=zipfile.ZIP_STORED))
    for signature, flag_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        offset = data.find(signature)
        data[offset + flag_at] |= 0x1
    refused(bytes(data), "an encrypted file is refused")
