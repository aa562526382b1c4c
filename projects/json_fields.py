"""``SchemaJSONField``: a JSONField whose schema lives in ``projects.schemas``.

The schema is referenced by name, so migrations stay small and a schema change needs no migration.
``validate`` (run by ``full_clean``) enforces it with ``projects.json_validation``; the admin form
draws django-jsonform's editor from the same schema but validates with our validator, because
django-jsonform's own check only covers a subset of JSON Schema (it treats every listed property as
required, for one).
"""
from __future__ import annotations

import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db import models
from django_jsonform.forms.fields import JSONFormField
from django_jsonform.widgets import JSONFormWidget

from projects import schemas
from projects.errors import InvalidData
from projects.json_validation import validate_json


class SchemaFormField(JSONFormField):
    def __init__(self, *, schema_name: str, **kwargs: Any) -> None:
        self.schema_name = schema_name
        super().__init__(**kwargs)

    def validate(self, value: Any) -> None:
        forms.JSONField.validate(self, value)
        _validate_or_raise(self.schema_name, value, label=self.label or self.schema_name)


class RawSchemaFormField(forms.JSONField):
    """A plain JSON textarea, for values too free-form for a generated editor (state, receipts)."""

    def __init__(self, *, schema_name: str, **kwargs: Any) -> None:
        self.schema_name = schema_name
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 16, "cols": 100, "class": "vLargeTextField"}))
        super().__init__(**kwargs)

    def validate(self, value: Any) -> None:
        super().validate(value)
        _validate_or_raise(self.schema_name, value, label=str(self.label or self.schema_name))


def _validate_or_raise(schema_name: str, value: Any, *, label: str) -> None:
    if value is None:
        return
    try:
        validate_json(schema_name, value, label=label)
    except InvalidData as exc:
        raise ValidationError(exc.message, code="invalid_json") from exc


class UnicodeJSONEncoder(json.JSONEncoder):
    """JSON with the story's Chinese text as itself rather than ``\\uXXXX`` escapes: a chapter's
    worth of text is half the bytes to send, and PostgreSQL parses it faster into ``jsonb``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["ensure_ascii"] = False  # json.dumps passes its own default; this one wins
        super().__init__(*args, **kwargs)


class SchemaJSONField(models.JSONField):
    def __init__(self, *args: Any, schema_name: str, editor: str = "form", **kwargs: Any) -> None:
        if schema_name not in schemas.SCHEMAS:
            raise ValueError(f"unknown schema {schema_name!r}")
        self.schema_name = schema_name
        self.editor = editor  # "form": django-jsonform; "raw": JSON textarea
        kwargs.setdefault("encoder", UnicodeJSONEncoder)
        super().__init__(*args, **kwargs)

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        kwargs["schema_name"] = self.schema_name
        # The editor is a form concern, like a widget; the encoder only spells the same JSON
        # differently (the column holds the same value): neither is migrated.
        if kwargs.get("encoder") is UnicodeJSONEncoder:
            del kwargs["encoder"]
        return name, path, args, kwargs

    def validate(self, value: Any, model_instance: models.Model) -> None:
        super().validate(value, model_instance)
        if value is None and self.null:
            return
        try:
            validate_json(self.schema_name, value, label=self.name)
        except InvalidData as exc:
            raise ValidationError(exc.message, code="invalid_json") from exc

    def formfield(self, **kwargs: Any):
        if self.editor == "raw":
            return super().formfield(**{"form_class": RawSchemaFormField, "schema_name": self.schema_name, **kwargs})
        schema = schemas.SCHEMAS[self.schema_name]
        widget = JSONFormWidget(schema=schema, model_name=self.model.__name__)
        return super().formfield(
            **{"form_class": SchemaFormField, "schema_name": self.schema_name, "widget": widget, **kwargs}
        )
