"""DRF field for JSON that must match one of ``projects.schemas``: the API's write path uses the
same validator as the model, the admin and the importer."""
from __future__ import annotations

from typing import Any

from rest_framework import serializers

from projects.errors import InvalidData
from projects.json_validation import validate_json


class SchemaJSONSerializerField(serializers.JSONField):
    def __init__(self, *, schema_name: str, **kwargs: Any) -> None:
        self.schema_name = schema_name
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        try:
            validate_json(self.schema_name, value, label=self.field_name or self.schema_name)
        except InvalidData as exc:
            raise serializers.ValidationError(exc.message, code="invalid_json") from exc
        return value
