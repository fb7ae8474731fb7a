"""Every page in the learner's language (docs/i18n.md): the browser's Accept-Language, the header's switch
and the settings page pick it, a signed-in learner's choice follows them to any browser at login; no page
prints a template comment; a stored verdict reads in Chinese."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from cards.models import Card, CardState, Profile
from graders.drills.schema import parse_drill
from graders.management.commands.import_drills import card_fields, card_key, drill_fields
from graders.models import Drill, Submission
from teams import services, tasks
from teams.models import BoardPreference
from tests.cards.factories import make_card, make_note
from tests.graders.conftest import drill_text

pytestmark = pytest.mark.django_db
ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9,en;q=0.5"}
EN = {"HTTP_ACCEPT_LANGUAGE": "en-US,en;q=0.9"}
CJK = re.compile(r"[\u4e00-\u9fff]")

# A wrong answer as the grader stores it: the first mismatch, a hidden test, run facts.
WRONG_VERDICT = {
    "status": "wrong_answer",
    "message": "small: wrong value at [1]: expected 3.0, got 4.0; max abs error 1, max rel error 0.333 "
    "(allowed: |actual - expected| <= 1e-05 + 1e-05 * |expected|)",
    "tests": [
        {"name": "small", "hidden": False, "passed": False, "message": "wrong value at [1]: expected 3.0, got 4.0"},
        {"name": "random-1", "hidden": True, "passed": False, "message": "not run"},
    ],
    "passed": 0,
    "total": 2,
    "hidden_passed": 0,
    "hidden_total": 1,
    "cpu_ms": 3.0,
    "wall_ms": 4.0,
    "mismatch": {
        "kind": "value",
        "path": "",
        "index": "[1]",
        "message": "wrong value at [1]: expected 3.0, got 4.0",
        "expected": "3.0",
        "actual": "4.0",
        "max_abs_error": 1.0,
        "max_rel_error": 0.333,
        "atol": 1e-05,
        "rtol": 1e-05,
    },
}


@pytest.fixture
def learner() -> User:
    user = User.objects.create_user("learner", password="pw-123456", email="learner@example.com")
    Profile.objects.create(user=user)
    return user


@pytest.fixture
def world(learner: User) -> dict[str, object]:
    """A card, a drill with a wrong submission, a team: enough for every page to show its parts."""
    note = make_note(slug="pytorch-basics")
    card = make_card(note=note)
    spec = parse_drill(drill_text(), "notes/drills/add-one.toml")
    drill_card = Card.objects.create(key=card_key(spec.slug), **card_fields(spec, note, 10_001))
    drill = Drill.objects.create(slug=spec.slug, card=drill_card, **drill_fields(spec, drill_text(), spec.path))
    now = timezone.now()
    sub = Submission.objects.create(
        user=learner,
        drill=drill,
        code="def solution(x):\n    return x + 2\n",
        seed=1,
        drill_version=drill.version,
        status="wrong_answer",
        verdict=WRONG_VERDICT,
        queued_at=now - timedelta(seconds=5),
        finished_at=now,
    )
    team = services.create_team(learner, "Tensor club", "Asia/Shanghai")
    return {"card": card, "note": note, "drill": drill, "sub": sub, "team": team}


def pages(world: dict[str, object]) -> list[str]:
    card, note, drill, sub, team = (world[k] for k in ("card", "note", "drill", "sub", "team"))
    return [
        reverse("cards:dashboard"),
        reverse("cards:review"),
        reverse("cards:decks"),
        reverse("cards:deck", args=[note.slug]),  # type: ignore[attr-defined]
        reverse("cards:card", args=[card.uuid]),  # type: ignore[attr-defined]
        reverse("cards:card_edit", args=[card.uuid]),  # type: ignore[attr-defined]
        reverse("cards:note", args=[note.slug]),  # type: ignore[attr-defined]
        reverse("cards:stats"),
        reverse("cards:calibration"),
        reverse("cards:settings"),
        reverse("cards:switch_scheduler") + "?to=fsrs",
        reverse("cards:anki_export"),
        reverse("cards:anki_import"),
        reverse("graders:hub"),
        reverse("graders:drill", args=[drill.slug]),  # type: ignore[attr-defined]
        reverse("graders:history", args=[drill.slug]),  # type: ignore[attr-defined]
        reverse("graders:submission", args=[sub.uuid]),  # type: ignore[attr-defined]
        reverse("teams:index"),
        reverse("teams:detail", args=[team.slug]),  # type: ignore[attr-defined]
        reverse("teams:board", args=[team.slug]),  # type: ignore[attr-defined]
        reverse("teams:stats", args=[team.slug]),  # type: ignore[attr-defined]
        reverse("teams:global_board"),
        reverse("teams:preferences"),
    ]


def test_it_prints_no_template_comment_on_any_page(learner: User, world: dict[str, object]) -> None:
    client = Client()
    for url in [reverse("login"), reverse("cards:signup")]:
        assert "{#" not in client.get(url).content.decode(), url
    client.force_login(learner)
    for headers in (EN, ZH):
        for url in pages(world):
            response = client.get(url, **headers)
            assert response.status_code == 200, url
            assert "{#" not in response.content.decode(), f"{url} shows a template comment"


def test_it_follows_the_browser_language_on_every_page(learner: User, world: dict[str, object]) -> None:
    client = Client()
    client.force_login(learner)
    for url in pages(world):
        page = client.get(url, **ZH).content.decode()
        assert '<html lang="zh-Hans">' in page, url
        assert ">设置</a>" in page and ">退出登录</button>" in page, f"{url}: the header is not in Chinese"
    english = client.get(reverse("cards:dashboard"), **EN).content.decode()
    assert '<html lang="en">' in english and ">Settings</a>" in english


def test_it_shows_the_main_pages_in_chinese(learner: User, world: dict[str, object]) -> None:
    client = Client()
    client.force_login(learner)
    expected = {
        reverse("cards:dashboard"): ["今日到期", "开始复习", "未来 7 天"],
        reverse("cards:review"): ["显示答案", "搁置到明天", "键盘快捷键", "重来", "良好"],
        reverse("cards:stats"): ["你的统计", "真实保持率", "各笔记的编程练习"],
        reverse("cards:settings"): ["界面语言", "每日新卡数", "调度算法", "立即拟合我的参数"],
        reverse("graders:hub"): ["编程练习", "难度", "你的状态"],
        reverse("teams:index"): ["全站排行榜", "创建团队"],
    }
    for url, texts in expected.items():
        page = client.get(url, **ZH).content.decode()
        for text in texts:
            assert text in page, f"{url}: {text}"


def test_it_shows_the_drill_and_its_verdict_in_chinese_with_the_chinese_statement_first(
    learner: User, world: dict[str, object]
) -> None:
    client = Client()
    client.force_login(learner)
    drill, sub = world["drill"], world["sub"]
    page = client.get(reverse("graders:drill", args=[drill.slug]), **ZH).content.decode()  # type: ignore[attr-defined]
    for text in ("示例", "限制与约束", "运行示例", "提交", "我的提交"):
        assert text in page, text
    assert page.index("给张量的每个元素加一") < page.index("Add one to every element")
    english = client.get(reverse("graders:drill", args=[drill.slug]), **EN).content.decode()  # type: ignore[attr-defined]
    assert english.index("Add one to every element") < english.index("给张量的每个元素加一")
    status = client.get(reverse("graders:submission", args=[sub.uuid]), **ZH).content.decode()  # type: ignore[attr-defined]
    shown = ("答案错误", "通过 0/2", "隐藏测试 0/1", "值错误", "首个不同处在索引", "最大绝对误差", "未运行", "墙钟")
    for text in shown:
        assert text in status, text
    assert "[1] 的值错误：期望 3.0，实际 4.0" not in status  # the mismatch's own table says it, once


def test_it_remembers_the_header_switch_in_a_cookie_and_on_the_profile(learner: User) -> None:
    client = Client()
    client.force_login(learner)
    response = client.post(reverse("cards:set_language"), {"language": "zh-hans", "next": "/stats/"}, **EN)
    assert response.status_code == 302 and response["Location"] == "/stats/"
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    learner.profile.refresh_from_db()
    assert learner.profile.language == "zh-hans"
    assert '<html lang="zh-Hans">' in client.get(reverse("cards:dashboard"), **EN).content.decode()


def test_it_restores_a_learners_language_at_login_on_a_new_browser(learner: User) -> None:
    Profile.objects.filter(user=learner).update(language="zh-hans")
    browser = Client()
    response = browser.post(reverse("login"), {"username": "learner", "password": "pw-123456"}, **EN)
    assert response.status_code == 302
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    assert ">概览</a>" in browser.get(reverse("cards:dashboard"), **EN).content.decode()


def test_it_switches_the_language_in_settings_and_back_to_the_browsers(learner: User) -> None:
    client = Client()
    client.force_login(learner)
    form = {
        "language": "zh-hans",
        "time_zone": "Asia/Shanghai",
        "day_start_hour": 4,
        "new_cards_per_day": 20,
        "reviews_per_day": 200,
        "desired_retention": "0.90",
    }
    response = client.post(reverse("cards:settings"), form, **EN)
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    assert "设置已保存。" in client.get(reverse("cards:settings")).content.decode()
    response = client.post(reverse("cards:settings"), {**form, "language": ""}, **EN)
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == ""  # deleted: Accept-Language decides
    learner.profile.refresh_from_db()
    assert learner.profile.language == ""
    assert ">Settings</a>" in client.get(reverse("cards:settings"), **EN).content.decode()


def test_it_keeps_a_language_chosen_before_signing_up(db: None) -> None:
    client = Client()
    client.post(reverse("cards:set_language"), {"language": "zh-hans", "next": "/"})
    form = {"username": "newbie", "password1": "a-long-pass-phrase", "password2": "a-long-pass-phrase"}
    assert client.post(reverse("cards:signup"), form).status_code == 302
    assert Profile.objects.get(user__username="newbie").language == "zh-hans"


def test_it_answers_the_api_in_the_browsers_language(learner: User) -> None:
    response = Client().get("/api/v1/review/next/", **ZH)
    assert response.status_code in (401, 403)
    assert CJK.search(response.json()["error"]["message"])
    missing = Client().get("/api/v1/no-such-thing/", **ZH).json()
    assert missing["error"]["message"] == "没有这个 API 接口。"


def test_it_mails_the_digest_in_the_learners_own_language(learner: User) -> None:
    """No browser asks for a mail: the learner's stored choice decides, and English stays the default."""
    other = User.objects.create_user("other", email="other@example.com")
    now = datetime(2026, 3, 4, 9, 0, tzinfo=UTC)
    for user in (learner, other):
        services.set_preferences(user, global_board=False, daily_digest=True)
        BoardPreference.objects.filter(user=user).update(confirmed_email=user.email)  # digests go to confirmed ones
        CardState.objects.create(user=user, card=make_card(), due=date(2026, 3, 3), last_reviewed_at=now)
    Profile.objects.filter(user=learner).update(language="zh-hans", time_zone="UTC")
    assert tasks.send_daily_digests(now) == 2
    by_address = {message.to[0]: message for message in mail.outbox}
    chinese, english = by_address["learner@example.com"], by_address["other@example.com"]
    assert chinese.subject == "今天有 1 张卡片到期" and "一键退订" in chinese.body and "你好" in chinese.body
    assert english.subject == "1 card due today" and "Stop it in one click" in english.body
