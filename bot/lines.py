"""Filling the persona's fixed lines: `{placeholders}` from persona files."""

from __future__ import annotations

import re
from typing import Any


def fill(template: str, **values: Any) -> str:
    """str.format that leaves unknown {placeholders} alone (lines come from persona files)."""
    return re.sub(r"\{(\w+)\}", lambda m: str(values.get(m.group(1), m.group(0))), template)
