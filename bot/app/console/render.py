"""HTML for the console: Jinja2 templates (autoescaped: every name, message and argument a
person or a stranger wrote is shown as text), the usage chart as server-drawn SVG, and the
headers every console response carries."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from aiohttp import web
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

# Nothing from elsewhere: scripts, styles and images come from Valet itself; no framing; the
# sign-in link never travels in a Referer header.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                               "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def when(at: datetime | None, zone: str = "UTC") -> str:
    """A time as the person it concerns reads it: in their zone, with the zone named."""
    if at is None:
        return "—"
    local = at.astimezone(ZoneInfo(zone))
    return f"{local:%a %d %b %Y, %H:%M} ({zone})"


def shown(value: Any) -> str:
    """An argument as text: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           default=str, indent=1)


def who(people: dict[str, Any], user_id: str) -> str:
    """A person's name (display name, else id) from the page's `people`."""
    user = people.get(user_id)
    return (user.display_name or user_id) if user is not None else (user_id or "—")


def one_line(text: str | None, limit: int = 140) -> str:
    line = " ".join((text or "").split())
    return line if len(line) <= limit else line[:limit - 1] + "…"


class Templates:
    def __init__(self) -> None:
        self.env = Environment(loader=PackageLoader("bot.app.console", "templates"),
                               autoescape=select_autoescape(["html"]),
                               undefined=StrictUndefined, trim_blocks=True,
                               lstrip_blocks=True)
        self.env.filters.update(when=when, shown=shown, one_line=one_line)
        self.env.globals["who"] = who

    def render(self, name: str, **values: Any) -> str:
        return self.env.get_template(name).render(**values)


def html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html",
                        headers=SECURITY_HEADERS)


@dataclass(frozen=True)
class Series:
    label: str
    css: str  # the bar's class (its colour, in console.css)
    values: Sequence[float]


def bar_chart(title: str, labels: Sequence[str], stack: Sequence[Series],
              unit: str = "") -> Markup:
    """Stacked bars, one per label, as inline SVG (scales to the page's width). Each bar has
    a tooltip with its numbers, and the chart a text alternative."""
    width, height, top, bottom = 640, 200, 16, 24
    count = max(len(labels), 1)
    totals = [sum(s.values[i] for s in stack) for i in range(len(labels))]
    peak = max(totals, default=0) or 1
    slot = width / count
    bar = max(slot * 0.7, 1.0)
    scale = (height - top - bottom) / peak
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="{escape(title)}" preserveAspectRatio="none">',
             f"<title>{escape(title)}</title>",
             f'<text x="0" y="11" class="axis">{_number(peak)}{escape(unit)}</text>']
    for i, label in enumerate(labels):
        x = i * slot + (slot - bar) / 2
        y = float(height - bottom)
        tip = f"{label}: " + ", ".join(f"{s.label} {_number(s.values[i])}" for s in stack)
        for series in stack:
            h = series.values[i] * scale
            if h <= 0:
                continue
            y -= h
            parts.append(f'<rect class="{series.css}" x="{x:.1f}" y="{y:.1f}" '
                         f'width="{bar:.1f}" height="{h:.1f}"><title>{escape(tip)}</title>'
                         "</rect>")
    if labels:
        parts.append(f'<text x="0" y="{height - 6}" class="axis">{escape(labels[0])}</text>')
        parts.append(f'<text x="{width}" y="{height - 6}" class="axis" '
                     f'text-anchor="end">{escape(labels[-1])}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def _number(value: float) -> str:
    if value >= 10_000:
        return f"{value / 1000:.0f}k"
    return f"{value:g}" if value == int(value) else f"{value:.2f}"
