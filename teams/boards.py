"""Leaderboards: computed from the daily rollup, cached live in Redis sorted sets.

The database is the source of truth; Redis only makes reads cheap. With ``settings.REDIS_URL``
empty (the laptop default) every board is computed from ``DailyActivity`` on each request, which
is the same function the rebuild uses, so both paths rank identically.

Keys (all under ``TEAMS_BOARD_PREFIX``, default ``quizsite:boards:``; nothing else is touched):

* ``rows:all`` / ``rows:week:<monday>``: hash user id -> JSON board row (XP, reviews, retention
  inputs, drills first try, streak, score).
* ``z:team:<team id>:all`` / ``z:team:<team id>:week:<monday>``: sorted set user id -> score.
* ``z:global:all`` / ``z:global:week:<monday>``: the same for the opted-in global board.

A week is keyed by the Monday of the learner days it holds: a learner day counts toward the week
whose Monday..Sunday contains it, and a board shows the week that its season clock (Monday 04:00 in
the team's time zone; the site's zone for the global board) says is current.
A read that finds a key missing or short of members recomputes it from the database (self-healing),
so a flushed Redis costs one slow request per board, never a wrong board.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import date, datetime, timedelta
from functools import cache
from typing import Literal
from zoneinfo import ZoneInfo

import redis
from django.conf import settings
from django.db.models import OuterRef, Subquery, Sum
from django.utils import timezone

from .activity import clocks_for
from .models import BoardPreference, DailyActivity, Membership, Team
from .streaks import season_start, streak_now
from .xp import board_score, rank_key, true_retention

logger = logging.getLogger(__name__)

Period = Literal["week", "all"]
WEEK_KEY_TTL = 6 * 7 * 24 * 3600
GLOBAL_BOARD_SIZE = 100


@dataclass(frozen=True)
class BoardRow:
    """One learner's numbers for one period: what a board line shows and how it ranks."""

    user_id: int
    xp: int = 0
    reviews: int = 0
    mature_reviews: int = 0
    mature_passed: int = 0
    drills_first_try: int = 0
    streak: int = 0
    drills_solved: int = 0

    @property
    def score(self) -> float:
        return board_score(self.xp, self.mature_reviews, self.mature_passed)

    @property
    def retention(self) -> float | None:
        return true_retention(self.mature_reviews, self.mature_passed)

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> BoardRow:
        return cls(**json.loads(text))


@dataclass(frozen=True)
class BoardEntry:
    rank: int
    row: BoardRow
    name: str
    is_you: bool = False


def prefix() -> str:
    return str(getattr(settings, "TEAMS_BOARD_PREFIX", "quizsite:boards:"))


@cache
def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=2)


def client() -> redis.Redis | None:
    """The Redis that caches boards, or None when REDIS_URL is empty (boards come from the DB)."""
    url = settings.REDIS_URL
    return _client(url) if url else None


def global_season(now: datetime) -> date:
    return season_start(now, ZoneInfo(settings.TIME_ZONE))


def team_season(team: Team, now: datetime) -> date:
    return season_start(now, team.zone)


# ------------------------------------------------------------------------------ from the database


def compute_rows(user_ids: Iterable[int], monday: date | None, now: datetime | None = None) -> dict[int, BoardRow]:
    """Board rows for these learners, for the week opening on ``monday`` (None: all time). Three queries."""
    ids = list(user_ids)
    now = now or timezone.now()
    days = DailyActivity.objects.filter(user_id__in=ids)
    totals = days.filter(day__gte=monday, day__lt=monday + timedelta(days=7)) if monday else days
    sums = totals.values("user_id").annotate(
        s_xp=Sum("xp"),
        s_reviews=Sum("reviews"),
        s_mature=Sum("mature_reviews"),
        s_passed=Sum("mature_passed"),
        s_first=Sum("drills_first_try"),
        s_solved=Sum("drills_solved"),
    )
    streaks = current_streaks(ids, now)
    rows = {uid: BoardRow(user_id=uid, streak=streaks.get(uid, 0)) for uid in ids}
    for s in sums:
        uid = s["user_id"]
        rows[uid] = BoardRow(
            uid, s["s_xp"], s["s_reviews"], s["s_mature"], s["s_passed"], s["s_first"], rows[uid].streak, s["s_solved"]
        )
    return rows


def current_streaks(user_ids: Sequence[int], now: datetime) -> dict[int, int]:
    """Each learner's streak as of their own current learner day, from their latest active day. Two queries."""
    clocks = clocks_for(user_ids)
    latest_day = DailyActivity.objects.filter(user_id=OuterRef("user_id"), reviewed=True).order_by("-day")
    latest = DailyActivity.objects.filter(
        user_id__in=user_ids, reviewed=True, day=Subquery(latest_day.values("day")[:1])
    )
    last = {a.user_id: a for a in latest}
    out = {}
    for uid in user_ids:
        clock, activity = clocks[uid], last.get(uid)
        today = clock.today(now)
        if activity is None:
            out[uid] = 0
        else:
            out[uid] = streak_now(activity.active_day, activity.streak_state, today).current
    return out


def rank(rows: Iterable[BoardRow], joined: dict[int, float], names: dict[int, str], me: int | None) -> list[BoardEntry]:
    """The one board order (teams.xp.rank_key), numbered 1..n."""
    ordered = sorted(rows, key=lambda r: rank_key(r.score, r.xp, joined.get(r.user_id, 0.0), r.user_id))
    return [BoardEntry(i, r, names.get(r.user_id, "?"), r.user_id == me) for i, r in enumerate(ordered, start=1)]


# ------------------------------------------------------------------------------ Redis


def _rows_key(monday: date | None) -> str:
    return f"{prefix()}rows:" + (f"week:{monday.isoformat()}" if monday else "all")


def _zset_key(scope: str, monday: date | None) -> str:
    return f"{prefix()}z:{scope}:" + (f"week:{monday.isoformat()}" if monday else "all")


def store_rows(
    conn: redis.Redis, rows: dict[int, BoardRow], monday: date | None, scopes_by_user: dict[int, list[str]]
) -> None:
    """Write rows into the shared hash and each user's scores into the sorted sets of their scopes."""
    if not rows:
        return
    pipe = conn.pipeline(transaction=False)
    rows_key = _rows_key(monday)
    pipe.hset(rows_key, mapping={str(uid): row.to_json() for uid, row in rows.items()})
    touched = {rows_key}
    for uid, row in rows.items():
        for scope in scopes_by_user.get(uid, []):
            key = _zset_key(scope, monday)
            pipe.zadd(key, {str(uid): row.score})
            touched.add(key)
    if monday is not None:
        for key in touched:
            pipe.expire(key, WEEK_KEY_TTL)
    pipe.execute()


def scopes_for(user_ids: Sequence[int]) -> dict[int, list[str]]:
    """The sorted sets each learner belongs in: one per team, plus the global board if opted in. Two queries."""
    scopes: dict[int, list[str]] = defaultdict(list)
    for uid, team_id in Membership.objects.filter(user_id__in=user_ids).values_list("user_id", "team_id"):
        scopes[uid].append(f"team:{team_id}")
    for uid in BoardPreference.objects.filter(user_id__in=user_ids, global_board=True).values_list(
        "user_id", flat=True
    ):
        scopes[uid].append("global")
    return scopes


PUBLISH_LOCK_SECONDS = 10  # a publish takes milliseconds; the lock of a holder that died expires
PUBLISH_LOCK_WAIT = 5.0


def publish_user(user_id: int, day: date, now: datetime | None = None) -> None:
    """After a review or a verdict: push the learner's new week and all-time rows to every board they are on.

    One publish per learner at a time (a Redis lock), reading their rows only once it holds the
    lock: two workers refreshing the same learner could otherwise store in the wrong order, an older
    total landing after a newer one and staying on the board.
    """
    conn = client()
    if conn is None:
        return
    scopes = scopes_for([user_id])
    if not scopes:
        return  # on no board: nothing reads the row (joining a team or the global board publishes it)
    now = now or timezone.now()
    monday = day - timedelta(days=day.weekday())
    lock = conn.lock(f"{prefix()}lock:user:{user_id}", timeout=PUBLISH_LOCK_SECONDS, blocking_timeout=PUBLISH_LOCK_WAIT)
    try:
        with lock:
            store_rows(conn, compute_rows([user_id], monday, now), monday, scopes)
            store_rows(conn, compute_rows([user_id], None, now), None, scopes)
    except redis.RedisError:  # LockError included
        # The database already holds the truth; the next read or rebuild repairs the cache.
        logger.warning("could not update the Redis boards for user %s", user_id, exc_info=True)


def drop_user_from_team(team_id: int, user_id: int) -> None:
    """A member left or was removed: take them off the team's sorted sets (all weeks)."""
    conn = client()
    if conn is None:
        return
    try:
        for key in conn.scan_iter(match=f"{prefix()}z:team:{team_id}:*", count=500):
            conn.zrem(key, str(user_id))
    except redis.RedisError:
        logger.warning("could not drop user %s from the Redis boards of team %s", user_id, team_id, exc_info=True)


def _cached_rows(conn: redis.Redis, scope: str, monday: date | None, ids: list[int]) -> dict[int, BoardRow] | None:
    """The rows of these members from Redis, or None when the cache is missing any of them."""
    pipe = conn.pipeline(transaction=False)
    pipe.zcard(_zset_key(scope, monday))
    pipe.hmget(_rows_key(monday), [str(i) for i in ids])
    card, raw = pipe.execute()
    if card != len(ids) or any(r is None for r in raw):
        return None
    return {uid: BoardRow.from_json(r) for uid, r in zip(ids, raw, strict=True)}


def board_rows(scope: str, monday: date | None, ids: list[int], now: datetime) -> dict[int, BoardRow]:
    """Rows from Redis when it holds them all; else from the database, written back to Redis."""
    conn = client()
    if conn is None or not ids:
        return compute_rows(ids, monday, now)
    try:
        cached = _cached_rows(conn, scope, monday, ids)
        if cached is not None:
            return cached
        rows = compute_rows(ids, monday, now)
        conn.delete(_zset_key(scope, monday))
        store_rows(conn, rows, monday, {uid: [scope] for uid in ids})
        return rows
    except redis.RedisError:
        logger.warning("Redis boards unavailable; computing %s from the database", scope, exc_info=True)
        return compute_rows(ids, monday, now)


# ------------------------------------------------------------------------------ the boards


def team_board(team: Team, period: Period, me: int | None = None, now: datetime | None = None) -> list[BoardEntry]:
    """Every member of the team, ranked. Members with no activity yet rank last with zeros."""
    now = now or timezone.now()
    monday = team_season(team, now) if period == "week" else None
    members = list(team.memberships.select_related("user").only("user_id", "team_id", "joined_at", "user__username"))
    ids = [m.user_id for m in members]
    rows = board_rows(f"team:{team.pk}", monday, ids, now)
    joined = {m.user_id: m.joined_at.timestamp() for m in members}
    names = {m.user_id: m.user.username for m in members}
    return rank(rows.values(), joined, names, me)


def _global_top_from_redis(monday: date | None, opted_in: int) -> dict[int, BoardRow] | None:
    """The head of the global sorted set (with room for ties at the cut), or None when it is incomplete."""
    conn = client()
    if conn is None:
        return None
    key = _zset_key("global", monday)
    try:
        if conn.zcard(key) != opted_in:
            return None
        head = conn.zrevrange(key, 0, GLOBAL_BOARD_SIZE - 1, withscores=True)
        if not head:
            return {}
        cut = head[-1][1]
        ids = [int(m) for m in conn.zrangebyscore(key, cut, "+inf")]  # everyone tied with the last place too
        raw = conn.hmget(_rows_key(monday), [str(i) for i in ids])
    except redis.RedisError:
        logger.warning("Redis boards unavailable; computing the global board from the database", exc_info=True)
        return None
    if any(r is None for r in raw):
        return None
    return {uid: BoardRow.from_json(r) for uid, r in zip(ids, raw, strict=True)}


def global_board(period: Period, me: int | None = None, now: datetime | None = None) -> list[BoardEntry]:
    """The opted-in learners, ranked; the top ``GLOBAL_BOARD_SIZE``.

    From Redis only the head of the sorted set is read, so the page costs the same with a million
    learners opted in; without Redis (or with an incomplete set) every opted-in learner is computed.
    """
    now = now or timezone.now()
    monday = global_season(now) if period == "week" else None
    opted = BoardPreference.objects.filter(global_board=True)
    rows = _global_top_from_redis(monday, opted.count())
    if rows is None:
        ids = list(opted.values_list("user_id", flat=True))
        rows = board_rows("global", monday, ids, now)
    prefs = (
        opted.filter(user_id__in=list(rows)).select_related("user").only("user_id", "global_since", "user__username")
    )
    joined = {p.user_id: (p.global_since or now).timestamp() for p in prefs}
    names = {p.user_id: p.user.username for p in prefs}
    return rank(rows.values(), joined, names, me)[:GLOBAL_BOARD_SIZE]


def rebuild(now: datetime | None = None) -> dict[str, int]:
    """Drop every board key under our prefix and write them again from the database.

    Writes the all-time boards and each team's (and the global board's) current week.
    Returns counts for the command's report.
    """
    conn = client()
    now = now or timezone.now()
    learners = set(Membership.objects.values_list("user_id", flat=True))
    learners |= set(BoardPreference.objects.filter(global_board=True).values_list("user_id", flat=True))
    ids = sorted(learners)
    mondays = {team_season(t, now) for t in Team.objects.only("time_zone")} | {global_season(now)}
    if conn is None:
        return {"learners": len(ids), "keys": 0}
    scopes = scopes_for(ids)
    deleted = 0
    for key in conn.scan_iter(match=f"{prefix()}*", count=1000):
        deleted += conn.delete(key)
    for monday in [None, *sorted(mondays)]:
        store_rows(conn, compute_rows(ids, monday, now), monday, scopes)
    return {"learners": len(ids), "keys": sum(1 for _ in conn.scan_iter(match=f"{prefix()}*", count=1000))}


def team_rank(team: Team, user_id: int, now: datetime | None = None) -> int | None:
    """The learner's place on the team's weekly board (for the digest)."""
    for entry in team_board(team, "week", me=user_id, now=now):
        if entry.row.user_id == user_id:
            return entry.rank
    return None
