"""The API's one JSON parser: DRF's, with a bound on nesting (``quizsite.json_depth``).

A body nested thousands deep made ``json.load`` raise ``RecursionError``, which DRF does not catch (a
500); one just shallow enough to parse was walked recursively by the serializers and the error renderer.
Now both answer 400 ``parse_error`` with the reason, before any view reads the body.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from django.utils.translation import gettext as _
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from quizsite import json_depth


class BoundedJSONParser(JSONParser):
    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
            json_depth.check(data)
        except (RecursionError, json_depth.TooDeep):
            raise ParseError(
                _("The JSON body nests deeper than %(depth)d levels of lists and objects.")
                % {"depth": json_depth.MAX_DEPTH}
            ) from None
        return data
