"""``SchemaJSONField``: a JSONField whose schema lives in ``projects.schemas``.

The schema is referenced by name, so migrations stay small and a schema change needs no migration.
``validate`` (run by ``full_clean``) enforces it with ``projects.json_validation``; the admin form
draws django-jsonform's editor from the same schema but validates with our validator, because
django-jsonform's own check only covers a subset of JSON Schema (it treats every listed property as
required, for one).
"""
from __future__ import annotations

import copy
import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db import models
from django_jsonform.forms.fields import JSONFormField
from django_jsonform.widgets import JSONFormWidget

from projects import json_editor, schemas
from projects.errors import InvalidData
from projects.json_input import json_problem
from projects.json_validation import json_issues, validate_json


class PostedJSONMixin:
    """``forms.JSONField`` parsing with the cases it lets through refused as form errors: JSON nested
    too deep (``projects.json_input``: a RecursionError further on, so a 500), text PostgreSQL cannot
    store (NUL characters), and a blank textarea taken for malformed JSON."""

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            value = ""
        try:
            parsed = super().to_python(value)
        except RecursionError:
            raise ValidationError("This JSON is nested too deeply.", code="invalid") from None
        problem = json_problem(parsed)
        if problem:
            raise ValidationError(f"This JSON cannot be stored: it is {problem}." if problem.startswith("nested")
                                  else f"This JSON cannot be stored: it {problem}.", code="invalid")
        return parsed

    def bound_data(self, data: Any, initial: Any) -> Any:
        try:
            return super().bound_data(data, initial)
        except RecursionError:  # shown back as the text that was posted, with the error above it
            return forms.fields.InvalidJSONInput(data)



class SchemaFormField(PostedJSONMixin, JSONFormField):
    """django-jsonform's editor for a schema of ``projects.schemas``.

    The editor draws ``json_editor.editor_schema``; what it posts is merged with the value the form
    started from (``initial_value``, set by ``SchemaJSONFormMixin``) so that placeholders it added
    are not stored, then validated against the real schema. ``value_when_empty`` is stored for an empty
    post (a browser without JavaScript): the model field's default, or None where it is nullable.
    """

    def __init__(self, *, schema_name: str, value_when_empty: Any = None, **kwargs: Any) -> None:
        self.schema_name = schema_name
        self.value_when_empty = value_when_empty
        self.initial_value: Any = None
        self.raw = False  # True: the value is edited as plain JSON (see use_raw_editor)
        kwargs.setdefault("widget", JSONFormWidget(schema=json_editor.editor_schema(schema_name)))
        super().__init__(**kwargs)

    def use_raw_editor(self) -> None:
        """Edit this value as plain JSON: the form editor could not show it without changing it."""
        self.raw = True
        self.widget = _json_textarea()
        self.help_text = " ".join(filter(None, [str(self.help_text), _RAW_FALLBACK_HELP]))

    def clean(self, value: Any) -> Any:
        value = self.to_python(value)
        if not self.raw and value is not None:
            value = json_editor.merge_editor_output(self.schema_name, value, self.initial_value)
        if value is None and self.value_when_empty is not None:
            value = copy.deepcopy(self.value_when_empty)
        self.validate(value)
        self.run_validators(value)
        return value

    def validate(self, value: Any) -> None:
        forms.JSONField.validate(self, value)
        if value is None:
            return
        issues = json_issues(self.schema_name, value)
        if issues and isinstance(self.widget, JSONFormWidget):
            self.widget.add_error(json_editor.editor_error_map(issues))
        _validate_or_raise(self.schema_name, value, label=str(self.label or self.schema_name))


_RAW_FALLBACK_HELP = "Shown as JSON: this value has a shape the form editor cannot show without changing it."


def _json_textarea() -> forms.Textarea:
    return forms.Textarea(attrs={"rows": 16, "cols": 100, "class": "vLargeTextField"})


class RawSchemaFormField(PostedJSONMixin, forms.JSONField):
    """A plain JSON textarea, for values too free-form for a generated editor (state, receipts)."""

    def __init__(self, *, schema_name: str, value_when_empty: Any = None, **kwargs: Any) -> None:
        self.schema_name = schema_name
        self.value_when_empty = value_when_empty
        kwargs.setdefault("widget", _json_textarea())
        super().__init__(**kwargs)

    def clean(self, value: Any) -> Any:
        value = self.to_python(value)
        if value is None and self.value_when_empty is not None:
            value = copy.deepcopy(self.value_when_empty)
        self.validate(value)
        self.run_validators(value)
        return value

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


class SchemaJSONFormMixin:
    """For model forms with schema JSON fields: tells each editor the value it starts from, and
    edits as plain JSON a value the form editor cannot show faithfully."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():
            if not isinstance(field, SchemaFormField):
                continue
            initial = self.get_initial_for_field(field, name)
            if isinstance(initial, str):  # a form built with initial data as JSON text
                try:
                    initial = json.loads(initial)
                except ValueError:
                    initial = None
            field.initial_value = copy.deepcopy(initial)
            if not json_editor.fits_editor(field.schema_name, initial):
                field.use_raw_editor()


class SchemaJSONModelForm(SchemaJSONFormMixin, forms.ModelForm):
    pass


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
        # An empty post stores the field's default (a blank non-null column would be a 500), or
        # None where the column allows it.
        value_when_empty = None if self.null or not self.has_default() else self.get_default()
        common = {"schema_name": self.schema_name, "value_when_empty": value_when_empty}
        if self.editor == "raw":
            return super().formfield(**{"form_class": RawSchemaFormField, **common, **kwargs})
        widget = JSONFormWidget(schema=json_editor.editor_schema(self.schema_name), model_name=self.model.__name__)
        return super().formfield(**{"form_class": SchemaFormField, **common, "widget": widget, **kwargs})
