"""Anki export (.apkg parsed back with sqlite3), import round trips, and every hostile file we refuse."""

from __future__ import annotations

import io
import itertools
import json
import random
import re
import sqlite3
import tempfile
import time
import zipfile
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any
from unittest import mock

from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import TestCase, override_settings
from django.urls import reverse
from django.utils import timezone

from cards import anki
from cards import review as reviewing
from cards.models import Card, CardState, Note, Profile, ReviewLog
from tests.cards.factories import make_card, make_note, make_user

FIXTURES = Path(__file__).parent / "fixtures" / "anki"
CODE_HTML = '<div class="highlight"><pre><code class="language-python"><span class="n">x</span></code></pre></div>'


def apkg_bytes(notes: list[Note], user: object = None) -> bytes:
    package, _ = anki.build_package(notes, schedule_for=user)
    buffer = io.BytesIO()
    anki.write_apkg(package, buffer, timestamp=1_700_000_000)
    return buffer.getvalue()


def open_collection(data: bytes, folder: Path) -> sqlite3.Connection:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert set(archive.namelist()) == {"collection.anki2", "media"}
        (folder / "c.sqlite3").write_bytes(archive.read("collection.anki2"))
    return sqlite3.connect(folder / "c.sqlite3")


def make_collection(
    folder: Path,
    notes: list[tuple[int, str, str]],
    *,
    models: str = "{}",
    decks: str = "{}",
    extra_sql: str = "",
) -> Path:
    """A minimal collection with Anki's tables: rows of (model id, tags, fields joined by \\x1f)."""
    path = folder / "collection.anki2"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE col (id integer primary key, models text, decks text);"
        "CREATE TABLE notes (id integer primary key, guid text, mid integer, tags text, flds text);"
        "CREATE TABLE cards (id integer primary key, nid integer, did integer);" + extra_sql
    )
    conn.execute("INSERT INTO col VALUES (1, ?, ?)", (models, decks))
    for index, (mid, tags, flds) in enumerate(notes, start=1):
        conn.execute("INSERT INTO notes VALUES (?, ?, ?, ?, ?)", (index, f"g{index}", mid, tags, flds))
        conn.execute("INSERT INTO cards VALUES (?, ?, 5)", (index, index))
    conn.commit()
    conn.close()
    return path


def zip_members(members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


class ExportTests(TestCase):
    def setUp(self) -> None:
        self.note = make_note(slug="tensor-basics", title="张量基础")
        self.card = make_card(
            note=self.note,
            front="`x.shape`?",
            front_html=f"<p>形状</p>{CODE_HTML}",
            tags=["tensor-basics", "shape"],
            heading_path="张量基础 / 形状 与 维度",
        )
        self.other = make_card(note=self.note)
        make_card(note=self.note, active=False)
        self.user = make_user()

    def test_it_writes_one_note_per_active_card_with_html_tags_and_css(self) -> None:
        with tempfile.TemporaryDirectory() as folder:
            conn = open_collection(apkg_bytes([self.note]), Path(folder))
            notes = conn.execute("SELECT guid, tags, flds FROM notes ORDER BY id").fetchall()
            models = json.loads(conn.execute("SELECT models FROM col").fetchone()[0])
            decks = json.loads(conn.execute("SELECT decks FROM col").fetchone()[0])
        assert len(notes) == 2
        front, back, source = notes[0][2].split("\x1f")
        assert front == self.card.front_html and back == self.card.back_html
        assert "math inline" in notes[1][2].split("\x1f")[1]
        assert source == "张量基础 / 张量基础 / 形状 与 维度"
        assert notes[0][1].split() == ["tensor-basics", "shape", "quizsite::tensor-basics::张量基础::形状-与-维度"]
        assert ".highlight" in models[str(anki.MODEL_ID)]["css"]
        assert "quizsite::张量基础" in [deck["name"] for deck in decks.values()]

    def test_it_exports_new_cards_without_a_schedule_by_default(self) -> None:
        self._review(self.card, interval=6, due=date(2026, 11, 30))
        with tempfile.TemporaryDirectory() as folder:
            conn = open_collection(apkg_bytes([self.note]), Path(folder))
            rows = conn.execute("SELECT type, queue, ivl, due FROM cards").fetchall()
        assert rows == [(0, 0, 0, 0), (0, 0, 0, 0)]

    def test_it_exports_the_learners_interval_due_day_and_ease_when_asked(self) -> None:
        self._review(self.card, interval=6, due=date(2026, 11, 30), easiness=Decimal("2.36"), repetitions=2)
        other_user = make_user()
        self._review(self.other, interval=15, due=date(2026, 12, 9), user=other_user)
        with tempfile.TemporaryDirectory() as folder:
            conn = open_collection(apkg_bytes([self.note], self.user), Path(folder))
            rows = conn.execute(
                "SELECT n.flds, c.type, c.queue, c.ivl, c.due, c.factor, c.reps "
                "FROM cards c JOIN notes n ON n.id = c.nid"
            ).fetchall()
        by_front = {flds.split("\x1f")[0]: rest for flds, *rest in rows}
        due_day = (date(2026, 11, 30) - date(2014, 9, 19)).days
        assert by_front[self.card.front_html] == [2, 2, 6, due_day, 2360, 2]
        assert by_front[self.other.front_html] == [0, 0, 0, 0, 0, 0]  # someone else's review is not ours

    def test_an_fsrs_learner_exports_the_interval_fsrs_set_and_the_form_says_so(self) -> None:
        # Under FSRS the card keeps moving its SM-2 interval (1, then 6) beside FSRS's due day: the
        # export must write FSRS's interval (last review to due), not SM-2's.
        reviewing.get_profile(self.user)
        Profile.objects.filter(user=self.user).update(scheduler="fsrs")
        self._review(
            self.card, interval=6, due=date(2026, 12, 20), last_review_day=date(2026, 11, 30), stability=20.0,
            difficulty=5.0,
        )  # fmt: skip
        with tempfile.TemporaryDirectory() as folder:
            conn = open_collection(apkg_bytes([self.note], self.user), Path(folder))
            rows = conn.execute("SELECT ivl, due FROM cards WHERE type = 2").fetchall()
        assert rows == [(20, (date(2026, 12, 20) - date(2014, 9, 19)).days)]
        self.client.force_login(self.user)
        page = self.client.get(reverse("cards:anki_export")).content.decode()
        assert "your FSRS interval" in page and "SM-2" not in page

    def test_an_sm2_learner_is_told_the_export_carries_their_sm2_interval(self) -> None:
        self.client.force_login(self.user)
        assert "your SM-2 interval" in self.client.get(reverse("cards:anki_export")).content.decode()

    def test_it_keeps_guids_stable_across_exports(self) -> None:
        with tempfile.TemporaryDirectory() as folder:
            first = open_collection(apkg_bytes([self.note]), Path(folder)).execute("SELECT guid FROM notes").fetchall()
        with tempfile.TemporaryDirectory() as folder:
            second = open_collection(apkg_bytes([self.note]), Path(folder)).execute("SELECT guid FROM notes").fetchall()
        assert first == second

    def test_it_serves_the_package_from_the_export_page(self) -> None:
        self.client.force_login(self.user)
        page = self.client.get(reverse("cards:anki_export"))
        assert page.status_code == 200 and b"tensor-basics" in page.content
        response = self.client.get(reverse("cards:anki_export"), {"deck": "all", "schedule": "on"})
        assert response.status_code == 200
        assert response["Content-Disposition"].startswith('attachment; filename="quizsite-all-')
        with tempfile.TemporaryDirectory() as folder:
            assert open_collection(response.content, Path(folder)).execute("SELECT count(*) FROM notes").fetchone() == (
                2,
            )

    def test_it_writes_a_file_from_the_command(self) -> None:
        self._review(self.card, interval=6, due=date(2026, 11, 30))
        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder) / "deck.apkg"
            call_command("export_anki", str(out), deck=["tensor-basics"], user=self.user.username, verbosity=0)
            conn = open_collection(out.read_bytes(), Path(folder))
            assert conn.execute("SELECT count(*) FROM cards WHERE type = 2").fetchone() == (1,)
        with self.assertRaisesMessage(CommandError, "No deck with the slug nope"):
            call_command("export_anki", "x.apkg", deck=["nope"], verbosity=0)

    def _review(self, card: Card, *, interval: int, due: date, user: object = None, **fields: object) -> None:
        CardState.objects.create(
            user=user or self.user, card=card, interval=interval, due=due, last_reviewed_at=timezone.now(), **fields
        )


class ImportTests(TestCase):
    def setUp(self) -> None:
        self.folder = Path(self.enterContext(tempfile.TemporaryDirectory()))

    def assert_refused(self, name: str, data: bytes, message: str) -> None:
        before = (Note.objects.count(), Card.objects.count())
        with self.assertRaisesMessage(anki.AnkiImportError, message):
            anki.import_file(name, data)
        assert (Note.objects.count(), Card.objects.count()) == before

    def test_it_round_trips_an_exported_deck(self) -> None:
        note = make_note(title="Autograd")
        make_card(note=note, front="`y.backward()`?", front_html=f"<p>反向</p>{CODE_HTML}", tags=["grad"])
        make_card(note=note)
        imported, parsed = anki.import_file("autograd.apkg", apkg_bytes([note]))
        assert imported.title == "quizsite::Autograd" and imported.slug.startswith("anki-quizsite-autograd")
        cards = list(imported.cards.order_by("position"))
        assert [c.front for c in cards] == ["反向\nx", cards[1].front]
        assert cards[0].front_html == f"<p>反向</p>{CODE_HTML}"
        assert "grad" in cards[0].tags and cards[0].kind == Card.Kind.QA and parsed.skipped == 0
        assert "math inline" in cards[1].back_html

    def test_it_imports_a_package_exported_by_anki_itself(self) -> None:
        data = (FIXTURES / "anki-26.9-legacy.apkg").read_bytes()
        note, parsed = anki.import_file("anki-26.9-legacy.apkg", data)
        cards = list(note.cards.order_by("position"))
        assert note.title == "PyTorch::Tensors" and parsed.skipped == 0 and len(cards) == 2
        assert cards[0].front == "What does x.view(-1) do?" and cards[0].tags == ["tensor", "view"]
        assert cards[0].front_html == "What does <code>x.view(-1)</code> do?"
        assert (
            cards[0].back_html.startswith("Flattens <b>x</b> \\(n\\times m\\)") and "script" not in cards[0].back_html
        )
        assert cards[1].front == "[...] joins tensors along [which dim]"
        assert cards[1].back_html == "<b>torch.cat</b> joins tensors along <b>an existing dim</b><br>see docs"

    def test_it_refuses_a_package_in_ankis_newest_format(self) -> None:
        data = (FIXTURES / "anki-26.9-latest.apkg").read_bytes()
        self.assert_refused("anki-26.9-latest.apkg", data, "Support older Anki versions")

    def test_it_sanitises_fields_and_reads_cloze_notes(self) -> None:
        models = json.dumps({"7": {"type": 1}, "8": {"type": 0}})
        decks = json.dumps({"5": {"name": "PyTorch::Basics"}})
        hostile = (
            '<p onclick="x()">Q<script>alert(1)</script><img src="a.png">[sound:a.mp3]</p>'
            '\x1f<a href="javascript:x">A</a>'
        )
        path = make_collection(
            self.folder,
            [(8, "t1  t2", hostile), (7, "", "{{c1::torch.cat::fn}} joins\x1fextra"), (8, "", "<img src=x>\x1fback")],
            models=models,
            decks=decks,
        )
        note, parsed = anki.import_file("deck.apkg", zip_members({"collection.anki2": path.read_bytes()}))
        cards = list(note.cards.order_by("position"))
        assert note.title == "PyTorch::Basics" and parsed.skipped == 1
        assert cards[0].front_html == "<p>Q</p>" and cards[0].front == "Q"
        assert cards[0].back_html == '<a rel="noopener noreferrer nofollow">A</a>' and cards[0].tags == ["t1", "t2"]
        assert cards[1].front == "[fn] joins" and cards[1].back_html == "<b>torch.cat</b> joins<br>extra"

    def test_it_imports_csv_rows_as_markdown_with_tags(self) -> None:
        data = 'front,back,tags\n`x.shape`?,"形状, 即 $2 \\times 3$",shape tensor\n\n问题二,答案二\n'.encode()
        note, parsed = anki.import_file("cards.csv", data, title="My CSV deck")
        cards = list(note.cards.order_by("position"))
        assert note.slug == "anki-my-csv-deck" and len(cards) == 2
        assert cards[0].front_html == "<p><code>x.shape</code>?</p>\n" and cards[0].tags == ["shape", "tensor"]
        assert 'class="math inline"' in cards[0].back_html and cards[1].back == "答案二"

    def test_it_refuses_a_file_that_is_not_a_zip_archive(self) -> None:
        self.assert_refused("deck.apkg", b"this is not a zip file at all", "not a readable zip archive")

    def test_it_refuses_a_broken_archive(self) -> None:
        payload = b"SQLite format 3\x00" + random.Random(1).randbytes(8000)
        data = zip_members({"collection.anki2": payload}, zipfile.ZIP_STORED)
        self.assert_refused("deck.apkg", data[:4000], "not a readable zip archive")
        corrupted = bytearray(data)
        corrupted[2000] ^= 0xFF  # the member's bytes no longer match its CRC-32
        self.assert_refused("deck.apkg", bytes(corrupted), "damaged")

    def test_it_refuses_a_zip_bomb_before_extracting_it(self) -> None:
        bomb = zip_members({"collection.anki2": b"\x00" * (20 * 1024 * 1024)})
        assert len(bomb) < 64 * 1024
        self.assert_refused("deck.apkg", bomb, "possible zip bomb")

    def test_it_refuses_archives_whose_total_size_is_over_the_cap(self) -> None:
        members = {f"{i}": b"" for i in range(3)}
        data = bytearray(zip_members(members, zipfile.ZIP_STORED))
        # Forge the declared sizes in the central directory: nothing is extracted to find out.
        with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
            offsets = [info.header_offset for info in archive.infolist()]
        central = data.rfind(b"PK\x01\x02", 0)
        start = data.find(b"PK\x01\x02")
        for _ in offsets:
            data[start + 24 : start + 28] = (300 * 1024 * 1024).to_bytes(4, "little")
            start = data.find(b"PK\x01\x02", start + 4)
        assert central > 0
        self.assert_refused("deck.apkg", bytes(data), "over the 536870912 byte limit")

    def test_it_refuses_a_member_that_unpacks_to_more_than_it_declares(self) -> None:
        collection = make_collection(self.folder, [(1, "", "q\x1fa")]).read_bytes()
        data = bytearray(zip_members({"collection.anki2": collection}, zipfile.ZIP_STORED))
        start = data.find(b"PK\x01\x02")
        data[start + 24 : start + 28] = (100).to_bytes(4, "little")  # declared uncompressed size: 100 bytes
        self.assert_refused("deck.apkg", bytes(data), "damaged")

    def test_it_refuses_an_archive_without_a_collection(self) -> None:
        self.assert_refused("deck.apkg", zip_members({"media": b"{}"}), "no Anki collection")
        stub = make_collection(self.folder, [(1, "", "Please update to the latest Anki version\x1f")]).read_bytes()
        modern = zip_members({"collection.anki2": stub, "collection.anki21b": b"zstd", "meta": b"\x08\x03"})
        self.assert_refused("deck.apkg", modern, "newest format")

    def test_it_refuses_a_collection_that_is_not_sqlite(self) -> None:
        self.assert_refused("deck.apkg", zip_members({"collection.anki2": b"hello" * 100}), "not an SQLite database")

    def test_it_refuses_sqlite_with_an_unexpected_schema(self) -> None:
        path = self.folder / "collection.anki2"
        conn = sqlite3.connect(path)
        conn.executescript("CREATE TABLE notes (id integer primary key, body text); CREATE TABLE col (x text);")
        conn.close()
        self.assert_refused("deck.apkg", zip_members({"collection.anki2": path.read_bytes()}), "lacks flds, mid, tags")

    def test_it_refuses_a_collection_whose_json_nests_thousands_deep(self) -> None:
        path = make_collection(self.folder, [(1, "", "q\x1fa")], models="[" * 100_000 + "]" * 100_000)
        self.assert_refused("d.apkg", zip_members({"collection.anki2": path.read_bytes()}), "models are not valid JSON")

    def test_it_refuses_fields_of_an_unexpected_type(self) -> None:
        path = make_collection(self.folder, [])
        conn = sqlite3.connect(path)
        conn.execute("INSERT INTO notes VALUES (1, 'g', 1, '', ?)", (b"\x00\x01",))
        conn.commit()
        conn.close()
        self.assert_refused("d.apkg", zip_members({"collection.anki2": path.read_bytes()}), "unexpected type")

    def test_it_refuses_huge_fields_and_keeps_nothing(self) -> None:
        path = make_collection(self.folder, [(1, "", "ok\x1fok"), (1, "", "q\x1f" + "x" * (70 * 1024))])
        self.assert_refused("d.apkg", zip_members({"collection.anki2": path.read_bytes()}), "over the 65536 byte limit")
        self.assert_refused("d.csv", b"front,back\nq," + b"x" * (70 * 1024) + b"\n", "over the 65536 byte limit")

    def test_it_refuses_csv_files_that_are_binary_or_malformed(self) -> None:
        self.assert_refused("d.csv", b"q,a\n\xff\xfe,x\n", "not valid UTF-8")
        self.assert_refused("d.csv", b"q\x00a", "NUL bytes")
        self.assert_refused("d.csv", b"only one column\n", "needs a front and a back")
        self.assert_refused("d.csv", b"", "empty")
        self.assert_refused("d.csv", b",back only\n", "no cards with a front")

    def test_it_leaves_no_temporary_files_behind(self) -> None:
        scratch = self.folder / "scratch"
        scratch.mkdir()
        good = make_collection(self.folder, [(1, "tag", "q\x1fa")]).read_bytes()
        bad_schema = zip_members({"collection.anki2": b"SQLite format 3\x00" + b"\x00" * 200})
        with mock.patch.object(tempfile, "tempdir", str(scratch)):
            anki.import_file("ok.apkg", zip_members({"collection.anki2": good}))
            with self.assertRaises(anki.AnkiImportError):
                anki.import_file("bad.apkg", bad_schema)
            apkg_bytes([make_note()])
        assert list(scratch.iterdir()) == []

    def test_it_writes_nothing_when_saving_fails_midway(self) -> None:
        parsed = anki.read_upload("d.csv", b"q1,a1\nq2,a2\n")
        parsed.cards.append(anki.ImportedCard("", "", "", "", []))  # violates card_front_not_empty
        before = (Note.objects.count(), Card.objects.count())
        with self.assertRaises(Exception):  # noqa: B017 - the database's IntegrityError, whatever the backend
            anki.save_deck(parsed, source_name="d.csv", content_hash="0" * 64)
        assert (Note.objects.count(), Card.objects.count()) == before


class HostileTextTests(TestCase):
    """Every pattern over an uploaded field runs in time linear in the field (issue 36, item 7)."""

    def setUp(self) -> None:
        self.folder = Path(self.enterContext(tempfile.TemporaryDirectory()))

    def cloze_package(self, fields: list[str]) -> bytes:
        folder = Path(tempfile.mkdtemp(dir=self.folder))
        path = make_collection(folder, [(7, "", f) for f in fields], models=json.dumps({"7": {"type": 1}}))
        return zip_members({"collection.anki2": path.read_bytes()})

    def test_it_reads_a_note_of_repeated_cloze_openings_at_once(self) -> None:
        small = self.cloze_package(["{{c1::" * 98])
        assert len(small) < 1000  # the 589-byte upload of the report, give or take the test's schema
        big = ["{{c1::" * (anki.MAX_FIELD_BYTES // 6), "{{c1::" * 10_000 + "}}", "{{c1::a::" * 7000 + "\x1fb"]
        started = time.monotonic()
        small_deck = anki.read_upload("small.apkg", small)
        big_deck = anki.read_upload("big.apkg", self.cloze_package(big))  # 190 KB of fields
        assert time.monotonic() - started < 3.0  # ~0.1 s; the old regex took hours on the first field alone
        assert small_deck.cards[0].front == "{{c1::" * 98  # no deletion closes: the text as it is
        assert big_deck.cards[1].front.startswith("[{{c1::{{c1::") and len(big_deck.cards) == 3

    def test_it_reads_clozes_as_the_regex_it_replaces_did(self) -> None:
        old = re.compile(r"\{\{c\d+::(.*?)(?:::(.*?))?\}\}", re.DOTALL)
        pieces = ["{{c1::", "{{c22::", "}}", "::", ":", "}", "{", "a", "c1"]
        rng = random.Random(7)
        for _ in range(5000):
            text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
            expected = old.sub(lambda m: f"<{m.group(1)}|{m.group(2) or ''}>", text)
            assert anki._replace_clozes(text, lambda answer, hint: f"<{answer}|{hint}>") == expected, text

    def test_it_strips_sound_tags_from_a_field_of_unclosed_ones_at_once(self) -> None:
        path = make_collection(self.folder, [(1, "", "q" + "[sound:" * 9000 + "\x1fa")] * 40)
        started = time.monotonic()
        stored = zip_members({"collection.anki2": path.read_bytes()}, zipfile.ZIP_STORED)  # no bomb check
        deck = anki.read_upload("d.apkg", stored)
        assert time.monotonic() - started < 2.0  # ~0.2 s; a scan from each opening to the end took 7 s
        assert len(deck.cards) == 40 and deck.cards[0].front == "q" + "[sound:" * 9000


class ImportViewTests(TestCase):
    def setUp(self) -> None:
        self.staff = make_user()
        self.staff.user_permissions.add(Permission.objects.get(codename="add_card"))
        self.learner = make_user()

    def test_it_imports_an_upload_and_redirects_to_the_new_deck(self) -> None:
        self.client.force_login(self.staff)
        upload = SimpleUploadedFile("cards.csv", b"q1,a1\nq2,a2\n", content_type="text/csv")
        response = self.client.post(reverse("cards:anki_import"), {"file": upload, "title": "Quick"})
        note = Note.objects.get(slug="anki-quick")
        assert response.status_code == 302 and response["Location"] == reverse("cards:deck", args=[note.slug])
        assert note.cards.count() == 2

    def test_a_packages_review_log_becomes_the_importers_history_of_the_cards_it_makes(self) -> None:
        folder = Path(self.enterContext(tempfile.TemporaryDirectory()))
        day_ms = 86_400_000
        jan = int(datetime(2026, 1, 1, 12, tzinfo=UTC).timestamp() * 1000)
        today = int(timezone.now().timestamp() * 1000)
        revlog = (
            "CREATE TABLE revlog (id integer primary key, cid integer, usn integer, ease integer, ivl integer, "
            "lastIvl integer, factor integer, time integer, type integer);"
            f"INSERT INTO revlog VALUES ({jan}, 1, 0, 3, 1, 0, 2500, 8000, 0);"  # note 1: Good
            f"INSERT INTO revlog VALUES ({jan + 3 * day_ms}, 1, 0, 1, 1, 1, 2500, 9000, 1);"  # note 1: Again
            f"INSERT INTO revlog VALUES ({jan + 4 * day_ms}, 1, 0, 0, 9, 1, 2500, 0, 4);"  # a manual reschedule
            f"INSERT INTO revlog VALUES ({jan + day_ms}, 2, 0, 4, 4, 0, 2500, 4000, 0);"  # note 2: Easy
            f"INSERT INTO revlog VALUES ({jan + 2 * day_ms}, 3, 0, 3, 4, 0, 2500, 4000, 0);"  # note 3: no front
            f"INSERT INTO revlog VALUES ({today}, 2, 0, 3, 4, 0, 2500, 4000, 1);"  # today: not history
        )
        path = make_collection(folder, [(0, "", "q1\x1fa1"), (0, "", "q2\x1fa2"), (0, "", "\x1fno front")],
                               extra_sql=revlog)  # fmt: skip
        self.client.force_login(self.learner)
        upload = SimpleUploadedFile("deck.apkg", zip_members({"collection.anki2": path.read_bytes()}))
        response = self.client.post(reverse("cards:anki_import"), {"file": upload}, follow=True)
        self.assertContains(response, "Its review log added 3 past reviews to your history.")
        logs = ReviewLog.objects.filter(user=self.learner).order_by("reviewed_at")
        rows = list(logs.values_list("card__front", "review_day", "quality", "duration_ms", "source"))
        assert rows == [
            ("q1", date(2026, 1, 1), 4, 8000, "import"),
            ("q2", date(2026, 1, 2), 5, 4000, "import"),
            ("q1", date(2026, 1, 4), 1, 9000, "import"),
        ]
        assert ReviewLog.objects.filter(user=self.staff).count() == 0

    def test_a_broken_review_log_refuses_the_package_and_writes_nothing(self) -> None:
        folder = Path(self.enterContext(tempfile.TemporaryDirectory()))
        revlog = (
            "CREATE TABLE revlog (id, cid, usn, ease, ivl, lastIvl, factor, time, type);"
            "INSERT INTO revlog VALUES (1, 1, 0, 3, 1, 0, 2500, 'slow', 0);"
        )
        path = make_collection(folder, [(0, "", "q1\x1fa1")], extra_sql=revlog)
        with self.assertRaisesMessage(anki.AnkiImportError, "review log has entries of an unexpected type"):
            anki.import_file("deck.apkg", zip_members({"collection.anki2": path.read_bytes()}), reviewer=self.learner)
        assert not Note.objects.filter(slug__startswith="anki-").exists()

    def test_it_shows_the_error_of_a_hostile_upload_and_writes_nothing(self) -> None:
        self.client.force_login(self.staff)
        upload = SimpleUploadedFile("deck.apkg", b"PK\x03\x04garbage")
        response = self.client.post(reverse("cards:anki_import"), {"file": upload})
        assert response.status_code == 400 and b"not a readable zip archive" in response.content
        assert not Note.objects.exists()

    def post(self, user: object, data: bytes, name: str = "cards.csv", **fields: object) -> object:
        self.client.force_login(user)
        upload = SimpleUploadedFile(name, data)
        return self.client.post(reverse("cards:anki_import"), {"file": upload, **fields}, follow=True)

    def test_a_learner_imports_a_deck_private_to_them(self) -> None:
        response = self.post(self.learner, b"q1,a1\nq2,a2\n", title="Mine")
        note = Note.objects.get(slug="anki-mine")
        assert note.owner == self.learner
        assert "Imported 2 cards into “Mine”, private to you." in response.content.decode()
        assert "shared" not in self.client.get(reverse("cards:anki_import")).content.decode().lower().split("</h1>")[1]
        assert reverse("cards:anki_import") in self.client.get(reverse("cards:decks")).content.decode()
        now = timezone.now()
        item, _ = reviewing.next_card(self.learner, reviewing.get_profile(self.learner), now)
        assert item is not None and item.card.note == note
        other = make_user()
        item, snapshot = reviewing.next_card(other, reviewing.get_profile(other), now)
        assert item is None and snapshot.new == 0
        self.client.force_login(other)
        card = note.cards.first()
        for url in (
            reverse("cards:deck", args=[note.slug]),
            reverse("cards:note", args=[note.slug]),
            reverse("cards:card", args=[card.uuid]),
            f"/api/v1/decks/{note.slug}/",
            f"/api/v1/cards/{card.uuid}/",
        ):
            assert self.client.get(url).status_code == 404, url
        assert "Mine" not in self.client.get(reverse("cards:decks")).content.decode()
        assert "anki-mine" not in self.client.get(reverse("cards:anki_export")).content.decode()
        assert self.client.get("/api/v1/cards/").json()["count"] == 0

    def test_staff_may_share_an_imported_deck_and_a_learner_may_not(self) -> None:
        self.post(self.staff, b"q1,a1\n", title="Shared", shared="on")
        assert Note.objects.get(slug="anki-shared").owner is None
        self.post(self.learner, b"q1,a1\n", title="Tries", shared="on")
        assert Note.objects.get(slug="anki-tries").owner == self.learner

    def test_drill_cards_are_skipped_with_a_message_on_the_round_trip(self) -> None:
        note = make_note(title="Drills")
        make_card(note=note, front="q", back="a")
        back = "Write `solution` in the drill editor and submit it: the grader's verdict rates this card."
        make_card(note=note, kind=Card.Kind.DRILL, front="**Sum** it", back=back, back_html=f"<p>{back}</p>")
        exported = apkg_bytes([note])
        response = self.post(self.learner, exported, name="drills.apkg").content.decode()
        assert "Imported 1 card into" in response and "1 coding drill skipped: a drill is graded" in response
        imported = Note.objects.get(owner=self.learner)
        assert [c.front for c in imported.cards.all()] == ["q"]
        assert not Card.objects.filter(note=imported, back__contains="drill editor").exists()
        # An export made before the tag: recognised by the drill card's back.
        with mock.patch.object(anki, "DRILL_TAG", "not-the-tag"):
            older = apkg_bytes([note])
        _, parsed = anki.import_file("older.apkg", older, owner=self.learner)
        assert (len(parsed.cards), parsed.drills) == (1, 1)
        csv_drill = f'q,a\n"drill","{back}"\n'.encode()
        _, parsed = anki.import_file("d.csv", csv_drill, owner=self.learner)
        assert (len(parsed.cards), parsed.drills) == (1, 1)

    def test_a_drill_card_exports_its_reference_solution_as_the_back(self) -> None:
        from graders.models import Drill

        note = make_note(title="Drills")
        back = "Write `add_one` in the drill editor and submit it: the grader's verdict rates this card."
        card = make_card(note=note, kind=Card.Kind.DRILL, front="**Add one** to `x`", back=back, back_html=back)
        Drill.objects.create(
            card=card, slug="add-one", title="Add one", entry_point="add_one", definition="", version="v1",
            reference_code="def add_one(x):\n    return x + 1\n", source_path="drills/add-one.toml",
        )  # fmt: skip
        with tempfile.TemporaryDirectory() as folder:
            flds = open_collection(apkg_bytes([note]), Path(folder)).execute("SELECT flds FROM notes").fetchone()[0]
        exported = flds.split("\x1f")[1]
        assert "drill editor" not in exported and "Reference solution" in exported and "add_one" in exported
        assert "return" in exported and "x" in exported and "1" in exported
        # Still recognised as a drill on the way back in (by its tag).
        parsed = anki.read_upload("d.apkg", apkg_bytes([note]))
        assert (len(parsed.cards), parsed.drills) == (0, 1)

    def test_a_learners_export_shows_a_drills_reference_only_once_the_drill_page_would(self) -> None:
        """The drill page holds the reference back (a look is a failed recall): an export must not hand it out.
        Before the learner solved the drill the back links to it; after an accepted attempt it is the reference."""
        from graders.models import Drill, Submission
        from jobs.status import Status

        note = make_note(title="Drills")
        card = make_card(note=note, kind=Card.Kind.DRILL, front="**Add one**", back="editor", back_html="editor")
        drill = Drill.objects.create(
            card=card, slug="add-one", title="Add one", entry_point="add_one", definition="", version="v1",
            reference_code="def add_one(x):\n    return x + 1\n", source_path="drills/add-one.toml",
        )  # fmt: skip

        def exported_back() -> str:
            package, _ = anki.build_package([note], learner=self.learner)
            buffer = io.BytesIO()
            anki.write_apkg(package, buffer, timestamp=1_700_000_000)
            with tempfile.TemporaryDirectory() as folder:
                row = open_collection(buffer.getvalue(), Path(folder)).execute("SELECT flds FROM notes").fetchone()
            return str(row[0].split("\x1f")[1])

        locked = exported_back()
        assert "Reference solution" not in locked and ">return<" not in locked and "editor" not in locked
        assert "/drills/add-one/" in locked
        Submission.objects.create(
            user=self.learner, drill=drill, code="def add_one(x):\n    return 1 + x\n", status=Status.ACCEPTED,
            seed=1, drill_version=drill.version, finished_at=timezone.now(), verdict={"status": "accepted"},
        )  # fmt: skip
        unlocked = exported_back()
        assert "Reference solution" in unlocked and ">return<" in unlocked

    def test_a_learners_export_asks_the_same_queries_for_one_drill_as_for_many(self) -> None:
        """The drills' backs are looked up in batches (the drills, then which the learner unlocked), not two
        queries per drill card: ~160 for the bundled deck before."""
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from graders.models import Drill, Submission
        from jobs.status import Status

        def drills(note: Note, n: int) -> None:
            for i in range(n):
                card = make_card(note=note, kind=Card.Kind.DRILL, front=f"**Drill {i}**", back="editor")
                drill = Drill.objects.create(
                    card=card, slug=f"{note.slug}-{i}", title=f"Drill {i}", entry_point="f", definition="",
                    version="v1", reference_code=f"def f(x):\n    return x + {i}\n", source_path=f"d/{i}.toml",
                )  # fmt: skip
                if i % 2:
                    Submission.objects.create(
                        user=self.learner, drill=drill, code="def f(x): ...", status=Status.ACCEPTED, seed=1,
                        drill_version=drill.version, finished_at=timezone.now(), verdict={"status": "accepted"},
                    )  # fmt: skip

        def queries(note: Note) -> tuple[int, list[str]]:
            with CaptureQueriesContext(connection) as captured:
                package, _ = anki.build_package([note], learner=self.learner)
            backs = [n.fields[1] for deck in package.decks for n in deck.notes]
            return len(captured), backs

        one, many = make_note(slug="one", title="One"), make_note(slug="many", title="Many")
        drills(one, 1)
        drills(many, 12)
        few, _ = queries(one)
        counted, backs = queries(many)
        self.assertEqual(counted, few)
        self.assertEqual(sum("Reference solution" in b for b in backs), 6)  # the six the learner solved
        self.assertEqual(sum("/drills/many-" in b for b in backs), 6)  # the others link to their drill

    def test_an_imported_deck_lists_fronts_unescaped_and_names_its_source_once(self) -> None:
        self.post(self.learner, b'"a -> b: x > 0 & y < 1?",yes\n', title="Mine")
        note = Note.objects.get(owner=self.learner)
        card = note.cards.get()
        deck = self.client.get(reverse("cards:deck", args=[note.slug])).content.decode()
        assert "a -&gt; b: x &gt; 0 &amp; y &lt; 1?" in deck and "&amp;gt;" not in deck
        page = self.client.get(reverse("cards:card", args=[card.uuid])).content.decode()
        source = re.search(r'<a class="source"[^>]*>([^<]*)</a>', page)
        assert source is not None and source.group(1) == "Mine"

    def test_a_learner_corrects_the_text_of_their_own_imported_card(self) -> None:
        self.post(self.learner, b"teh front,the back\n", title="Mine")
        card = Note.objects.get(owner=self.learner).cards.get()
        url = reverse("cards:card_edit", args=[card.uuid])
        page = self.client.get(url).content.decode()
        assert "Cards come from the shared notes" not in page and 'name="card-front"' in page
        self.client.post(url, {"card-front": "the **front**", "card-back": "the back", "user_note": "typo"})
        card.refresh_from_db()
        assert (card.front, card.back) == ("the **front**", "the back") and "<strong>front</strong>" in card.front_html
        assert CardState.objects.get(user=self.learner, card=card).user_note == "typo"
        # Another learner's or a shared card's text is not theirs to edit.
        shared = make_card(note=make_note(title="Shared"), front="shared q")
        page = self.client.get(reverse("cards:card_edit", args=[shared.uuid])).content.decode()
        assert "Cards come from the shared notes" in page and 'name="card-front"' not in page
        self.client.post(reverse("cards:card_edit", args=[shared.uuid]), {"card-front": "mine now", "user_note": ""})
        shared.refresh_from_db()
        assert shared.front == "shared q"

    def test_a_file_of_drills_only_says_why_nothing_was_imported(self) -> None:
        back = "Write `solution` in the drill editor and submit it: the grader's verdict rates this card."
        response = self.post(self.learner, f'"drill","{back}"\n'.encode())
        assert "no cards with a front to import (1 coding drill skipped" in response.content.decode()
        assert not Note.objects.exists()

    def test_it_imports_from_the_command_and_supports_dry_run(self) -> None:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "cards.csv"
            path.write_bytes(b"q1,a1\n")
            call_command("import_anki", str(path), dry_run=True, verbosity=0)
            assert not Note.objects.exists()
            call_command("import_anki", str(path), title="From CLI", verbosity=0)
            path.write_bytes(b"not,a\x00csv")
            with self.assertRaisesMessage(CommandError, "Nothing was imported"):
                call_command("import_anki", str(path), verbosity=0)
        assert Note.objects.get().title == "From CLI"


class ImportBudgetTests(TestCase):
    """What one import, and one learner's imports together, may cost (``ANKI_IMPORT_*`` settings)."""

    def setUp(self) -> None:
        self.learner = make_user()
        self.client.force_login(self.learner)

    def post(self, data: bytes, name: str = "cards.csv") -> Any:
        upload = SimpleUploadedFile(name, data)
        return self.client.post(reverse("cards:anki_import"), {"file": upload})

    def assert_refused(self, data: bytes, message: str) -> None:
        before = (Note.objects.count(), Card.objects.count())
        response = self.post(data)
        assert response.status_code == 400
        self.assertContains(response, message, status_code=400)
        assert (Note.objects.count(), Card.objects.count()) == before

    @override_settings(ANKI_IMPORT_MAX_BYTES=100)
    def test_it_refuses_an_upload_over_the_byte_cap(self) -> None:
        self.assert_refused(b"q,a\n" * 30, "120 bytes, over the 100 byte limit")

    @override_settings(ANKI_IMPORT_MAX_CARDS=2)
    def test_it_refuses_a_file_of_more_cards_than_one_import_may_make(self) -> None:
        self.assert_refused(b"q1,a1\nq2,a2\nq3,a3\n", "more than 2 cards, the most one import may make")
        assert self.post(b"q1,a1\nq2,a2\n").status_code == 302

    @override_settings(ANKI_IMPORT_MAX_BYTES=4000)
    def test_it_refuses_cards_that_would_store_many_times_the_upload(self) -> None:
        rows = ('q,"' + "$a$ " * 250 + '"\n').encode() * 2  # 2 KB of math that renders ten times larger
        self.assert_refused(rows, "more than 16000 bytes once rendered")

    @override_settings(ANKI_IMPORT_TIME_BUDGET=5)
    def test_it_stops_reading_a_file_past_the_time_budget(self) -> None:
        clock = itertools.count(start=1000, step=2)  # each card read "takes" two seconds
        with mock.patch("cards.anki.time.monotonic", side_effect=lambda: next(clock)):
            self.assert_refused(b"q1,a1\nq2,a2\nq3,a3\nq4,a4\n", "took more than 5 seconds after 3 cards")
        clock = itertools.count(start=1000, step=2)  # rows without a front (skipped) spend the budget too
        with mock.patch("cards.anki.time.monotonic", side_effect=lambda: next(clock)):
            self.assert_refused(b",a1\n,a2\n,a3\n,a4\n", "took more than 5 seconds after 0 cards")

    @override_settings(ANKI_PRIVATE_CARDS_QUOTA=3)
    def test_it_keeps_a_learners_private_cards_within_the_quota(self) -> None:
        assert self.post(b"q1,a1\nq2,a2\n").status_code == 302
        self.assert_refused(b"q3,a3\nq4,a4\n", "You have 2 private cards and this file holds 2")
        make_card(note=make_note(owner=make_user()))  # another learner's and shared cards do not count
        make_card()
        assert self.post(b"q3,a3\n").status_code == 302
        assert Card.objects.filter(note__owner=self.learner).count() == 3
