"""The drill editor's form: every field of a drill file, and the way between it and the file's text.

The form holds a drill exactly as ``graders.authoring.document`` does (one field per value, the case lists,
the known-wrong and alternative solutions as formsets), so form -> TOML -> form is the identity and a TOML
text the form wrote comes back byte for byte (tests/courses/test_drill_forms.py checks both with hypothesis).
Every line break typed in a browser (which sends "\r\n") is stored as "\n". Whether the drill is right is
the schema's question (``graders.drills.schema``), asked of the text the form writes; the form checks only
what it needs to write one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from graders.authoring.document import Document, blank
from graders.drills.schema import COMPARE_MODES, DEVICES, DIFFICULTIES, EXPECTABLE, RESULT_GRAD, RESULT_KINDS

_NAMES = re.compile(r"[\s,]+")


def _choices(values: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(value, value) for value in values]


class TextField(forms.CharField):
    """Multi-line text kept as typed (no stripping), every line break as "\n"."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("strip", False)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 4}))
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> str:
        text = super().to_python(value)
        return text.replace("\r\n", "\n").replace("\r", "\n")


class CodeField(TextField):
    """A code field: the page upgrades it to the site's code editor (``data-code-field``)."""

    def __init__(self, **kwargs: Any) -> None:
        attrs = {
            "rows": 8,
            "spellcheck": "false",
            "autocapitalize": "off",
            "class": "code-input",
            "data-code-field": "",
        }
        super().__init__(widget=forms.Textarea(attrs=attrs), **kwargs)


class LineField(forms.CharField):
    """One line of text (a title, a name), stripped."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def validate(self, value: Any) -> None:
        super().validate(value)
        if "\n" in value or "\r" in value:
            raise ValidationError(_("One line only."))


class NamesField(forms.CharField):
    """A list of names typed as one line, separated by commas or spaces ("indexing, shapes")."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        return ", ".join(value) if isinstance(value, list) else value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        return [name for name in _NAMES.split(super().to_python(value)) if name]

    def validate(self, value: Any) -> None:
        pass


class LinesField(TextField):
    """A case's arguments: one expression per line, each stripped, blank lines dropped."""

    def prepare_value(self, value: Any) -> Any:
        return "\n".join(value) if isinstance(value, list) else value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        return [line.strip() for line in super().to_python(value).split("\n") if line.strip()]

    def validate(self, value: Any) -> None:
        pass


class BindingsField(TextField):
    """A case's ``let``: one ``name = expression`` per line, in order (later names may use earlier ones)."""

    def prepare_value(self, value: Any) -> Any:
        return "\n".join(f"{name} = {expr}" for name, expr in value.items()) if isinstance(value, dict) else value

    def to_python(self, value: Any) -> dict[str, str]:  # type: ignore[override]
        bound: dict[str, str] = {}
        for line in super().to_python(value).split("\n"):
            if not line.strip():
                continue
            name, equals, expr = line.partition("=")
            if not equals or not name.strip().isidentifier() or not expr.strip():
                raise ValidationError(_("Each line is “name = expression”: %(line)s"), params={"line": line[:80]})
            bound[name.strip()] = expr.strip()
        return bound

    def validate(self, value: Any) -> None:
        pass


def _float(**kwargs: Any) -> forms.FloatField:
    return forms.FloatField(min_value=0, widget=forms.NumberInput(attrs={"step": "any"}), **kwargs)


class DrillForm(forms.Form):
    """The drill file's fields outside the lists; a field's name is its TOML path (``compare_rtol``:
    ``[compare] rtol``)."""

    slug = LineField(max_length=120, label=_("Slug"), help_text=_("Lowercase words joined by '-'."))
    title = LineField(max_length=300, label=_("Title"))
    entry_point = LineField(max_length=200, label=_("Entry point"), help_text=_("The function the learner writes."))
    device = forms.ChoiceField(choices=_choices(DEVICES), label=_("Device"))
    difficulty = forms.ChoiceField(choices=_choices(DIFFICULTIES), label=_("Difficulty"))
    tags = NamesField(label=_("Tags"), help_text=_("Comma-separated, e.g. indexing, shapes."))
    track = LineField(max_length=60, label=_("Track"))
    position = forms.IntegerField(min_value=0, label=_("Position in the track"))
    prompt_en = TextField(label=_("Statement (English)"), help_text=_("Markdown. English, Chinese or both."))
    prompt_zh = TextField(label=_("Statement (Chinese)"))
    starter = CodeField(label=_("Starter code"))
    reference = CodeField(label=_("Reference solution"), help_text=_("Never shown to learners."))
    source_note = LineField(max_length=200, label=_("Note"), help_text=_("The course's note file, e.g. basics.md."))
    source_heading = LineField(max_length=300, label=_("Heading"), help_text=_("The note's heading the drill is for."))
    compare_mode = forms.ChoiceField(choices=_choices(COMPARE_MODES), label=_("Compare"))
    compare_rtol = _float(label=_("rtol"))
    compare_atol = _float(label=_("atol"))
    compare_check_dtype = forms.BooleanField(required=False, label=_("dtype must match"))
    compare_check_shape = forms.BooleanField(required=False, label=_("shape must match"))
    compare_check_device = forms.BooleanField(required=False, label=_("device must match"))
    compare_loose_scalars = forms.BooleanField(required=False, label=_("a number may stand for a 0-d tensor"))
    constraints_no_loops = forms.BooleanField(required=False, label=_("No Python loops"))
    constraints_forbid = NamesField(label=_("Must not call"), help_text=_("e.g. F.nll_loss, .flip"))
    constraints_allow = NamesField(label=_("May call only"), help_text=_("Empty: anything not forbidden."))
    constraints_max_source_bytes = forms.IntegerField(min_value=1, label=_("Largest code (bytes)"))
    constraints_single_expression = forms.BooleanField(required=False, label=_("One expression per function"))
    limits_cpu_seconds = _float(label=_("CPU seconds"))
    limits_wall_seconds = _float(label=_("Wall-clock seconds"))
    limits_memory_mb = forms.IntegerField(min_value=1, label=_("Memory (MB)"))
    contract_in_place = NamesField(label=_("Updated in place"), help_text=_("Arguments the function must change."))
    contract_result = forms.ChoiceField(choices=_choices(RESULT_KINDS), label=_("Result"))
    contract_result_grad = forms.ChoiceField(choices=_choices(RESULT_GRAD), label=_("Result's autograd graph"))
    contract_repeatable = forms.BooleanField(required=False, label=_("Same answer when called twice"))
    contract_graph_budget = _float(label=_("Graph budget (× the reference's)"))
    contract_memory_budget = _float(label=_("Memory budget (× the reference's)"))
    contract_time_budget = _float(label=_("Time budget (× the reference's)"))


TABLE_FIELDS = ("source", "compare", "constraints", "limits", "contract")


class ExampleForm(forms.Form):
    name = LineField(max_length=200, label=_("Name"))
    args = LinesField(label=_("Arguments"), help_text=_("One Python expression per line."))
    let = BindingsField(label=_("Let"), help_text=_("Optional: one “name = expression” per line."))


class HiddenForm(ExampleForm):
    repeat = forms.IntegerField(min_value=1, initial=1, label=_("Repeat"))
    fixed = forms.BooleanField(
        required=False, label=_("Fixed"), help_text=_("The same inputs for every seed (an edge case).")
    )


class WrongForm(forms.Form):
    why = LineField(max_length=300, label=_("Why it is wrong"))
    expect = forms.ChoiceField(choices=_choices(EXPECTABLE), label=_("Expected verdict"))
    says = LineField(max_length=300, label=_("The message says"), help_text=_("Optional words the verdict names."))
    code = CodeField(label=_("Code"))


class AlternativeForm(forms.Form):
    why = LineField(max_length=300, label=_("What it shows"))
    code = CodeField(label=_("Code"))


class HintForm(forms.Form):
    en = TextField(label=_("Hint (English)"), help_text=_("A nudge toward the idea, never the answer's code."))
    zh = TextField(label=_("Hint (Chinese)"))


LISTS: dict[str, type[forms.Form]] = {
    "examples": ExampleForm,
    "hidden": HiddenForm,
    "wrong": WrongForm,
    "alternative": AlternativeForm,
    "hints": HintForm,
}
# The fields that count as something typed: a list's row without any of them is an empty row, left out.
CONTENT = {"examples": ("name", "args", "let"), "hidden": ("name", "args", "let"), "wrong": ("why", "code", "says")}
CONTENT["alternative"] = ("why", "code")
CONTENT["hints"] = ("en", "zh")


def _formset(name: str) -> type[forms.BaseFormSet]:
    return forms.formset_factory(LISTS[name], extra=1, can_delete=True)


@dataclass
class DrillForms:
    """The main form and one formset per list (``examples``, ``hidden``, ``wrong``, ``alternative``, ``hints``)."""

    main: DrillForm
    lists: dict[str, forms.BaseFormSet]

    def is_valid(self) -> bool:
        return all([self.main.is_valid(), *(formset.is_valid() for formset in self.lists.values())])

    @property
    def document(self) -> Document:
        """The drill the forms hold (call once ``is_valid``)."""
        return document_of(self)


def drill_forms(document: Document | None = None, data: Any = None) -> DrillForms:
    """Bound to ``data`` (a POST), or showing ``document`` (the fields of a drill file, ``read_document``)."""
    document = document or blank()
    if data is not None:
        return DrillForms(DrillForm(data), {name: _formset(name)(data, prefix=name) for name in LISTS})
    main = DrillForm(initial=initial_of(document))
    lists = {name: _formset(name)(initial=document[name], prefix=name) for name in LISTS}
    return DrillForms(main, lists)


def initial_of(document: Document) -> dict[str, Any]:
    initial = {name: value for name, value in document.items() if name not in TABLE_FIELDS and name not in LISTS}
    for table in TABLE_FIELDS:
        initial.update({f"{table}_{key}": value for key, value in document[table].items()})
    return initial


def document_of(drill: DrillForms) -> Document:
    document = blank()
    for name, value in drill.main.cleaned_data.items():
        table, _sep, key = name.partition("_")
        if table in TABLE_FIELDS:
            document[table][key] = value
        else:
            document[name] = value
    for name, formset in drill.lists.items():
        document[name] = [_row(name, form.cleaned_data) for form in formset.forms if _kept(name, form)]
    return document


def _kept(name: str, form: forms.Form) -> bool:
    data = getattr(form, "cleaned_data", None) or {}
    return not data.get("DELETE") and any(data.get(key) for key in CONTENT[name])


def _row(name: str, data: dict[str, Any]) -> dict[str, Any]:
    row = {key: value for key, value in data.items() if key != "DELETE"}
    if name == "hidden" and row.get("repeat") is None:
        row["repeat"] = 1
    return row


def post_data(document: Document) -> dict[str, str]:
    """The POST a browser sends for ``document`` (no empty rows): what the tests submit, as a person would."""
    data: dict[str, str] = {}
    main = DrillForm()
    for name, value in initial_of(document).items():
        field = main.fields[name]
        if isinstance(field, forms.BooleanField):
            if value:
                data[name] = "on"
        else:
            data[name] = str(field.prepare_value(value))
    for name, rows in ((n, document[n]) for n in LISTS):
        data.update({f"{name}-TOTAL_FORMS": str(len(rows)), f"{name}-INITIAL_FORMS": "0"})
        fields = LISTS[name]().fields
        for index, row in enumerate(rows):
            for key, value in row.items():
                if isinstance(fields[key], forms.BooleanField):
                    if value:
                        data[f"{name}-{index}-{key}"] = "on"
                else:
                    data[f"{name}-{index}-{key}"] = str(fields[key].prepare_value(value))
    return data
