"""A fit's outcome in the learner's language (docs/i18n.md): ``cards.scheduling.fitting`` is pure and says
what it did in English, stored on ``Optimisation.message``; the settings page shows it translated."""

from __future__ import annotations

from django.utils.translation import gettext_noop

from quizsite.stored_text import Catalogue, shapes

CATALOGUE = Catalogue(
    shapes(
        gettext_noop(
            "Default parameters until %(needed)s reviews (%(have)s so far): the fit learns from the earlier "
            "%(share)s of them and needs %(train)s."
        ),
        gettext_noop(
            "Held-out log loss %(before)s -> %(after)s on %(n)s reviews of %(cards)s cards; new parameters kept."
        ),
        gettext_noop(
            "Held-out log loss %(before)s -> %(after)s on %(n)s reviews of %(cards)s cards; new parameters not kept: "
            "a verdict needs %(needed)s held-out reviews."
        ),
        gettext_noop(
            "Held-out log loss %(before)s -> %(after)s on %(n)s reviews of %(cards)s cards; new parameters not kept: "
            "the gain is within %(k)s standard errors (%(margin)s)."
        ),
        # What fits wrote before the paired keep rule (issue 39), still shown on the settings page.
        gettext_noop("Held-out log loss %(before)s -> %(after)s on %(n)s reviews; new parameters kept."),
        gettext_noop(
            "Held-out log loss %(before)s -> %(after)s on %(n)s reviews; new parameters not kept: the current "
            "parameters predict better."
        ),
        gettext_noop("The fit failed; the parameters were left as they were."),
    )
)


def translate(message: str) -> str:
    return CATALOGUE.translate(message)
