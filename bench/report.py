"""Figures, goals and the table: what every bench section records, and how it is shown.

A section adds *rows* (one measured case: its single measurements, their median, min and max)
and *goals* (a measured figure against the issue's limit). :func:`evaluate` is the one place
where goals pass or miss; :func:`print_table` prints the rows, then the goals, last.
Times are seconds (``time.perf_counter``), sizes bytes, ratios plain numbers.
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import asdict, dataclass, field


def log(msg: str) -> None:
    """Progress on stderr (the table goes to stdout)."""
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


@dataclass
class Goal:
    """A measured figure and the issue's limit on it.

    ``value`` is in ``unit`` ("s" seconds, "B" bytes, "x" ratio, "n" count); ``op`` is "<=" or
    ">=". ``value`` None means not measured: ``skip_reason`` says why (a skip is not a miss).
    """

    section: str
    name: str
    value: float | None
    limit: float
    unit: str
    op: str = "<="
    skip_reason: str = ""

    @property
    def status(self) -> str:
        """"pass", "miss" or "skip"."""
        if self.value is None:
            return "skip"
        ok = self.value <= self.limit if self.op == "<=" else self.value >= self.limit
        return "pass" if ok else "miss"


@dataclass
class Results:
    """Everything one bench run measured: rows by section, goals, and notes."""

    rows: list[dict] = field(default_factory=list)
    goals: list[Goal] = field(default_factory=list)

    def add(self, section: str, case: str, values: list[float], unit: str = "s", first: float | None = None,
            note: str = "") -> dict:
        """Record a case from its single measurements (unit as :class:`Goal`); returns the row,
        whose ``median`` is what the table shows (None without measurements). ``first``: a
        separate first call, seconds."""
        row = dict(section=section, case=case, unit=unit, n=len(values), values=values,
                   median=statistics.median(values) if values else None, min=min(values, default=None),
                   max=max(values, default=None), first=first, note=note or ("" if values else "not measured"))
        self.rows.append(row)
        return row

    def note(self, section: str, case: str, note: str) -> None:
        """A row without figures (a case skipped, a check's outcome)."""
        self.rows.append(dict(section=section, case=case, unit="", n=0, values=[], median=None, min=None,
                              max=None, first=None, note=note))

    def goal(self, section: str, name: str, value: float | None, limit: float, unit: str, op: str = "<=",
             skip_reason: str = "") -> Goal:
        """Record a goal (see :class:`Goal`); it is judged by :func:`evaluate`."""
        goal = Goal(section, name, value, limit, unit, op, skip_reason)
        self.goals.append(goal)
        return goal

    def as_json(self) -> dict:
        """Rows and goals (with their status) as plain data."""
        return dict(rows=self.rows, goals=[dict(asdict(g), status=g.status) for g in self.goals])


def evaluate(goals: list[Goal]) -> int:
    """The run's exit status: 1 when any goal is missed, else 0 (skipped goals are no miss)."""
    return 1 if any(g.status == "miss" for g in goals) else 0


def timed(fn, repeat: int, sync=None) -> tuple[float, list[float]]:
    """(first call, [``repeat`` further calls]) of ``fn()``, in seconds; ``sync()`` runs inside
    each timing (e.g. ``torch.cuda.synchronize``)."""
    def once() -> float:
        start = time.perf_counter()
        fn()
        if sync:
            sync()
        return time.perf_counter() - start

    first = once()
    return first, [once() for _ in range(repeat)]


def fmt(value: float | None, unit: str) -> str:
    """A figure for the table: seconds as ms or s, bytes with separators and MB, ratios as 1.23x."""
    if value is None:
        return ""
    if unit == "B":
        return f"{value / 1e6:.2f} MB" if value >= 1e5 else f"{int(value):,} B"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "n":
        return f"{value:g}"
    return f"{value * 1e3:.1f} ms" if value < 1 else f"{value:.2f} s"


def _columns(head: list[str], body: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(row[i]) for row in [head] + body) for i in range(len(head))]

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line(head), line(["-" * w for w in widths])] + [line(cells) for cells in body]


def table_lines(res: Results, header: str) -> list[str]:
    """The table: one line per row (sections separated by a blank line), then the goals."""
    head = ["section", "case", "median", "min", "max", "n", "1st call", "note"]
    body = [[r["section"], r["case"], fmt(r["median"], r["unit"]), fmt(r["min"], r["unit"]),
             fmt(r["max"], r["unit"]), str(r["n"]) if r["n"] else "", fmt(r["first"], "s"), r["note"]]
            for r in res.rows]
    lines = _columns(head, body, {2, 3, 4, 5, 6})
    out, last = [header, *lines[:2]], None
    for r, text in zip(res.rows, lines[2:]):
        if last is not None and r["section"] != last:
            out.append("")
        last = r["section"]
        out.append(text)
    goals = [[g.section, g.name, fmt(g.value, g.unit), f"{g.op} {fmt(g.limit, g.unit)}", g.status.upper(),
              g.skip_reason if g.status == "skip" else ""] for g in res.goals]
    missed = sum(g.status == "miss" for g in res.goals)
    out += ["", f"goals: {len(res.goals) - missed - sum(g.status == 'skip' for g in res.goals)} pass, "
                f"{missed} miss, {sum(g.status == 'skip' for g in res.goals)} skipped"]
    out += _columns(["section", "goal", "measured", "limit", "status", "why skipped"], goals, {2, 3})
    return out


def print_table(res: Results, header: str) -> None:
    """Print :func:`table_lines` on stdout, after a blank line."""
    print("\n" + "\n".join(table_lines(res, header)), flush=True)
