"""A fit's outcome reads in the learner's language (cards.fit_text): the message ``cards.scheduling.fitting``
itself writes comes out translated in Chinese and unchanged in English."""

from __future__ import annotations

import re

import pytest
from django.utils import translation

from cards import fit_text
from cards.scheduling import evaluate, fitting

CJK = re.compile(r"[\u4e00-\u9fff]")
ENGLISH_RUN = re.compile(r"\b[a-z]{2,}(?:[ ,'-]+[a-z]{2,}){2,}\b", re.IGNORECASE)


def too_few_reviews() -> str:
    reviews = [evaluate.Review(card_id=f"c{i % 5}", day=i, rating=3) for i in range(12)]
    return fitting.optimise(reviews, None).message


MESSAGES = [
    too_few_reviews(),
    "Held-out log loss 0.4123 -> 0.3987 on 210 reviews; new parameters kept.",
    "Held-out log loss 0.4123 -> 0.4190 on 210 reviews; new parameters not kept: the current parameters predict "
    "better.",
    "The fit failed; the parameters were left as they were.",
    "Held-out log loss 0.5046 -> 0.4792 on 1198 reviews of 551 cards; new parameters kept.",
    "Held-out log loss 0.3209 -> 0.3214 on 1355 reviews of 775 cards; new parameters not kept: the gain is within "
    "2 standard errors (0.0021).",
    "Held-out log loss 0.3209 -> 0.3100 on 150 reviews of 90 cards; new parameters not kept: a verdict needs 200 "
    "held-out reviews.",
]


@pytest.mark.parametrize("message", MESSAGES)
def test_it_shows_a_fits_outcome_in_chinese(message: str) -> None:
    with translation.override("zh-hans"):
        shown = fit_text.translate(message)
    assert CJK.search(shown) and not ENGLISH_RUN.findall(shown), shown


@pytest.mark.parametrize("message", MESSAGES)
def test_it_leaves_a_fits_outcome_as_written_in_english(message: str) -> None:
    with translation.override("en"):
        assert fit_text.translate(message) == message
