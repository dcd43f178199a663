"""The base of every group of lines (`LineGroup`): a frozen model whose persona overrides keep
the placeholders of their defaults ({name}), exactly. A group kept outside persona/ (a
channel's, channels/<name>/lines.py) names the folder of its translations."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

import pydantic

PLACEHOLDER = re.compile(r"\{(\w+)\}")


def placeholders(template: str) -> set[str]:
    return set(PLACEHOLDER.findall(template))


class LineGroup(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)
    # Where its lines in other languages are: a folder of <language>.yaml tables (es.yaml:
    # key -> wording), read as persona/catalog/ is (persona.catalog.group_table). None: the
    # group is part of persona's `Lines`, translated in persona/catalog/.
    translations_dir: ClassVar[Path | None] = None

    @pydantic.field_validator("*")
    @classmethod
    def _same_placeholders(cls, value: Any, info: pydantic.ValidationInfo) -> Any:
        """A persona's line takes the placeholders its default takes, no more, no fewer."""
        if not isinstance(value, str) or info.field_name is None:
            return value
        default = cls.model_fields[info.field_name].default
        expected, given = placeholders(default), placeholders(value)
        if given == expected:
            return value
        problems = [f"{{{name}}} is missing" for name in sorted(expected - given)]
        problems += [f"{{{name}}} is not known here" for name in sorted(given - expected)]
        takes = ", ".join(f"{{{name}}}" for name in sorted(expected)) or "no placeholders"
        raise ValueError(f"{'; '.join(problems)} (this line takes {takes})")
