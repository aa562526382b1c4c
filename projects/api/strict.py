"""Input serializers that refuse fields they do not know: a misspelt field is a 400, not a change
silently ignored."""
from __future__ import annotations

from collections.abc import Mapping

from rest_framework import serializers


class StrictInput(serializers.Serializer):
    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            unknown = sorted(str(key) for key in data if key not in self.fields)
            if unknown:
                raise serializers.ValidationError({key: ["Unknown field."] for key in unknown[:20]})
        return super().to_internal_value(data)
