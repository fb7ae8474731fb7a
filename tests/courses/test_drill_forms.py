"""The drill editor's form (courses/drill_forms.py) round-trips with the drill file exactly.

Through the Django form as a browser posts it: form -> TOML -> form is the identity, and a TOML text the
form wrote -> form -> TOML comes back byte for byte (hypothesis, over every field of a drill file).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from courses.drill_forms import drill_forms, post_data
from graders.authoring.document import read_document, write_drill
from tests.graders.test_authoring_document import documents

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def through_form(data: dict[str, str]) -> dict[str, Any]:
    forms = drill_forms(data=data)
    assert forms.is_valid(), (forms.main.errors, {k: f.errors for k, f in forms.lists.items()})
    return forms.document


@PROPERTY
@given(documents())
def test_form_to_toml_to_form_is_the_identity(document: dict[str, Any]) -> None:
    """What the form holds after a post, written as TOML and read back into the form, is what it held."""
    held = through_form(post_data(document))
    assert held == document
    again = through_form(post_data(read_document(write_drill(held))))
    assert again == held


@PROPERTY
@given(documents())
def test_toml_written_by_the_form_comes_back_byte_for_byte(document: dict[str, Any]) -> None:
    text = write_drill(through_form(post_data(document)))
    assert write_drill(through_form(post_data(read_document(text)))) == text


@PROPERTY
@given(documents(), st.sampled_from(["\r\n", "\r"]))
def test_it_stores_every_line_break_a_browser_sends_as_newline(document: dict[str, Any], newline: str) -> None:
    data = {key: value.replace("\n", newline) for key, value in post_data(document).items()}
    assert through_form(data) == document


def test_it_leaves_out_empty_and_deleted_rows() -> None:
    document = read_document(write_drill({"slug": "a"}))
    data = post_data(document) | {
        "wrong-TOTAL_FORMS": "2", "wrong-0-why": "off by one", "wrong-0-expect": "wrong_answer",
        "wrong-0-code": "x", "wrong-0-DELETE": "on", "wrong-1-expect": "wrong_answer",
    }  # fmt: skip
    assert through_form(data)["wrong"] == []


def test_it_refuses_a_let_line_without_a_name() -> None:
    data = post_data(read_document(write_drill({"slug": "a"}))) | {
        "examples-TOTAL_FORMS": "1", "examples-0-name": "x", "examples-0-args": "n", "examples-0-let": "= 3",
    }  # fmt: skip
    forms = drill_forms(data=data)
    assert not forms.is_valid()
    assert "name = expression" in str(forms.lists["examples"].errors)
