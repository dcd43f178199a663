"""Percentiles and a printed line per measurement."""

from __future__ import annotations

import statistics


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def line(label: str, values_ms: list[float]) -> str:
    return (f"  {label:<44} p50 {pct(values_ms, 50):8.3f} ms   p99 {pct(values_ms, 99):8.3f} ms"
            f"   mean {statistics.fmean(values_ms):8.3f} ms   n={len(values_ms)}")
