"""The API's JSON parser (``REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]``): DRF's, plus the checks of
``projects.json_input``, so every view gets a body that is nested at most 64 levels and holds no
text PostgreSQL refuses; anything else is a 400 ``parse_error`` before the view runs."""
from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from projects.json_input import MAX_JSON_DEPTH, json_problem


class CheckedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:  # deeper than the interpreter's recursion limit
            raise ParseError(f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels") from None
        problem = json_problem(data)
        if problem:
            raise ParseError(f"JSON parse error - {problem}")
        return data
