"""Which chart a result suits, as a Plotly figure the page draws with the packaged ``plotly.min.js``.

A category and a number give a bar chart; a date or time and a number give a line; a single value
is a big number; anything else is just the table (:func:`choose_chart` returns None).
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from numbers import Real
from typing import Any

MAX_BARS = 50  # more categories than this read better as the table
MAX_POINTS = 2000


@dataclass(frozen=True)
class Chart:
    """``kind`` is ``bar``, ``line`` or ``number``; ``figure`` is Plotly's ``{data, layout}`` (None for a number)."""

    kind: str
    value: Any = None
    label: str = ""
    figure: dict[str, Any] | None = field(default=None)


def is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and not (isinstance(value, float)
                                                                            and math.isnan(value))


def is_temporal(value: Any) -> bool:
    """A date or time: a ``datetime``/``date`` object, or ISO text such as ``2024-03-01`` or ``2024-03-01 10:00:00``."""
    if isinstance(value, dt.date | dt.datetime):
        return True
    if not isinstance(value, str) or len(value) < 7 or not value[:4].isdigit() or value[4] != "-":
        return False
    text = value if len(value) > 7 else value + "-01"  # 2024-03, a month
    try:
        dt.datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def _column_is(rows: list[tuple], index: int, test: Any) -> bool:
    values = [row[index] for row in rows if row[index] is not None]
    return bool(values) and all(test(v) for v in values)


def _label(value: Any) -> str:
    return "NULL" if value is None else str(value)


def choose_chart(columns: list[str], rows: list[tuple]) -> Chart | None:
    """The chart for a result, or None when the table says it best."""
    if not columns or not rows:
        return None
    if len(rows) == 1 and len(columns) == 1:
        value = rows[0][0]
        return Chart("number", value=value, label=columns[0]) if is_number(value) else None
    if len(columns) < 2:
        return None
    numeric = [i for i in range(len(columns)) if _column_is(rows, i, is_number)]
    if not numeric:
        return None
    y = numeric[-1]
    others = [i for i in range(len(columns)) if i != y]
    temporal = [i for i in others if _column_is(rows, i, is_temporal)]
    if temporal and len(rows) >= 2:
        x = temporal[0]
        points = sorted((str(r[x]), r[y]) for r in rows[:MAX_POINTS] if r[x] is not None)
        return _figure("line", columns[x], columns[y], [p[0] for p in points], [p[1] for p in points])
    if len(rows) > MAX_BARS:
        return None
    texts = [i for i in others if i not in numeric]
    x = texts[0] if texts else others[0]
    return _figure("bar", columns[x], columns[y], [_label(r[x]) for r in rows], [r[y] for r in rows])


def _figure(kind: str, x_title: str, y_title: str, xs: list[Any], ys: list[Any]) -> Chart:
    trace: dict[str, Any] = {"type": "bar" if kind == "bar" else "scatter", "x": xs, "y": ys, "name": y_title}
    if kind == "line":
        trace["mode"] = "lines+markers"
    layout = {
        "xaxis": {"title": {"text": x_title}, "type": "category" if kind == "bar" else "date", "automargin": True},
        "yaxis": {"title": {"text": y_title}, "automargin": True},
        "margin": {"t": 16, "r": 16, "b": 16, "l": 16},
        "height": 320,
    }
    return Chart(kind, label=y_title, figure={"data": [trace], "layout": layout})
