"""The REST API: `/api/v1/...`, its OpenAPI schema at `/api/schema/` and Swagger UI at `/api/docs/`.

Redoc is left out on purpose: its page loads web fonts from a CDN, and nothing here may.

Included from quizsite.urls under ``api/``; URL names are namespaced ``api:...``.
"""

from __future__ import annotations

from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from api import auth_views, card_views, course_views, grader_views, index_views, solution_views, team_views
from api.exceptions import not_found

app_name = "api"

v1 = [
    path("auth/token/", auth_views.TokenView.as_view(), name="token"),
    path("decks/", card_views.DeckList.as_view(), name="decks"),
    path("decks/<slug:slug>/", card_views.DeckDetail.as_view(), name="deck"),
    path("decks/<slug:slug>/cards/", card_views.DeckCardList.as_view(), name="deck-cards"),
    path("cards/", card_views.CardList.as_view(), name="cards"),
    path("cards/<uuid:uuid>/", card_views.CardDetail.as_view(), name="card"),
    path("review/next/", card_views.NextCard.as_view(), name="next-card"),
    path("reviews/", card_views.ReviewList.as_view(), name="reviews"),
    path("stats/", card_views.Stats.as_view(), name="stats"),
    path("drills/", grader_views.DrillList.as_view(), name="drills"),
    path("drills/<slug:slug>/", grader_views.DrillDetail.as_view(), name="drill"),
    path("drills/<slug:slug>/hints/", grader_views.DrillHints.as_view(), name="drill-hints"),
    path("drills/<slug:slug>/solutions/", solution_views.DrillSolutions.as_view(), name="drill-solutions"),
    path(
        "drills/<slug:slug>/solutions/comments/",
        solution_views.SolutionCommentCreate.as_view(),
        name="drill-solution-comments",
    ),
    path(
        "drills/<slug:slug>/solutions/comments/<uuid:comment>/",
        solution_views.SolutionCommentDetail.as_view(),
        name="drill-solution-comment",
    ),
    path("submissions/", grader_views.SubmissionList.as_view(), name="submissions"),
    path("submissions/<uuid:uuid>/", grader_views.SubmissionDetail.as_view(), name="submission"),
    path("runs/", grader_views.RunCreate.as_view(), name="runs"),
    path("runs/<uuid:uuid>/", grader_views.RunDetail.as_view(), name="run"),
    path("teams/", team_views.TeamList.as_view(), name="teams"),
    path("teams/<slug:slug>/", team_views.TeamDetail.as_view(), name="team"),
    path("teams/<slug:slug>/leaderboard/", team_views.Leaderboard.as_view(), name="leaderboard"),
    path("teams/<slug:slug>/course/", course_views.CourseDetail.as_view(), name="course"),
    path("teams/<slug:slug>/course/notes/", course_views.CourseNoteList.as_view(), name="course-notes"),
    path("teams/<slug:slug>/course/notes/<slug:note>/", course_views.CourseNoteDetail.as_view(), name="course-note"),
    path("teams/<slug:slug>/course/drills/", course_views.CourseDrillList.as_view(), name="course-drills"),
    path("teams/<slug:slug>/course/uploads/", course_views.CourseUploadCreate.as_view(), name="course-uploads"),
    path(
        "teams/<slug:slug>/course/uploads/<uuid:upload>/",
        course_views.CourseUploadDetail.as_view(),
        name="course-upload",
    ),
    path(
        "teams/<slug:slug>/course/uploads/<uuid:upload>/confirm/",
        course_views.CourseUploadConfirm.as_view(),
        name="course-upload-confirm",
    ),
]

urlpatterns = [
    path("", index_views.index, name="index"),
    path("v1/", include(v1)),
    re_path(r"^v1/", not_found),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
]
