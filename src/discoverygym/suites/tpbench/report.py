"""Report sections for `discoverygym report`: pass rates by level and by domain (bar
charts annotated with counts), verdict counts and a per-problem table (capped)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from ...core.escape import for_html
from .scoring import summarize_attempts

MAX_PROBLEM_ROWS = 60


def _bar_chart(labels: list[str], correct: list[int], totals: list[int], title: str,
               xlabel: str, horizontal: bool = False) -> str:
    from ...report.figures import figure_html, new_figure

    rates = [c / t if t else 0.0 for c, t in zip(correct, totals, strict=True)]
    height = 0.9 + 0.35 * len(labels) if horizontal else 3.0
    fig, ax = new_figure(6.0, max(2.4, height))
    positions = list(range(len(labels)))
    if horizontal:
        ax.barh(positions, rates, color="#4c72b0")
        ax.set_yticks(positions, labels)
        ax.invert_yaxis()
        ax.set_xlim(0, 1.15)
        ax.set_xlabel("pass rate (avg@k)")
        for y, (r, c, t) in enumerate(zip(rates, correct, totals, strict=True)):
            ax.text(r + 0.01, y, f"{c}/{t}", va="center", fontsize=8)
    else:
        ax.bar(positions, rates, color="#4c72b0")
        ax.set_xticks(positions, labels)
        ax.set_ylim(0, 1.15)
        ax.set_ylabel("pass rate (avg@k)")
        ax.set_xlabel(xlabel)
        for x, (r, c, t) in enumerate(zip(rates, correct, totals, strict=True)):
            ax.text(x, r + 0.02, f"{c}/{t}", ha="center", fontsize=8)
    ax.set_title(title)
    return figure_html(fig, f"{title}: " + ", ".join(
        f"{lab} {c}/{t}" for lab, c, t in zip(labels, correct, totals, strict=True)))


def _counts(records: list[dict[str, Any]], key: str) -> tuple[list[str], list[int], list[int]]:
    correct: dict[str, int] = defaultdict(int)
    total: dict[str, int] = defaultdict(int)
    for r in records:
        value = str((r.get("details") or {}).get(key, "unknown"))
        total[value] += 1
        correct[value] += bool(r.get("passed"))
    labels = sorted(total)
    return labels, [correct[k] for k in labels], [total[k] for k in labels]


def _table(header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{for_html(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{for_html(c)}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def report_sections(records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(title, HTML) pairs for the tpbench part of a run report."""
    records = [r for r in records if r.get("suite", "tpbench") == "tpbench"]
    if not records:
        return []
    summary = summarize_attempts(records)
    sections = []
    labels, correct, totals = _counts(records, "level")
    level_rows = [[lv, agg["n_problems"], f"{agg['avg_at_k']:.3f}", f"{agg['best_at_k']:.3f}",
                   f"{agg['gpa']:.2f}"] for lv, agg in summary["per_level"].items()]
    sections.append(("tpbench: pass rate by level", _bar_chart(
        [f"L{lab}" for lab in labels], correct, totals, "Pass rate by level", "level")
        + _table(["level", "problems", "avg@k", "best@k", "GPA"], level_rows)))
    labels, correct, totals = _counts(records, "domain")
    domain_rows = [[d, agg["n_problems"], f"{agg['avg_at_k']:.3f}", f"{agg['best_at_k']:.3f}",
                    f"{agg['gpa']:.2f}"] for d, agg in summary["per_domain"].items()]
    sections.append(("tpbench: pass rate by domain", _bar_chart(
        [lab.replace("_", " ") for lab in labels], correct, totals, "Pass rate by domain",
        "domain", horizontal=True)
        + _table(["domain", "problems", "avg@k", "best@k", "GPA"], domain_rows)))
    verdicts = Counter((r.get("details") or {}).get("verdict", "no_answer") for r in records)
    overall = summary["overall"]
    problem_rows = [[task, row["level"], row["domain"], f"{row['n_correct']}/{row['k']}",
                     row["grade"], ", ".join(f"{v} {n}" for v, n in sorted(row["verdicts"].items()))]
                    for task, row in list(summary["per_problem"].items())[:MAX_PROBLEM_ROWS]]
    more = len(summary["per_problem"]) - len(problem_rows)
    note = f"<p>{more} more problems not shown.</p>" if more > 0 else ""
    sections.append(("tpbench: verdicts and grades", (
        f"<p>avg@k {overall['avg_at_k']:.3f}, best@k {overall['best_at_k']:.3f}, "
        f"level-weighted GPA {overall['gpa']:.2f} over {overall['n_problems']} problems.</p>"
        + _table(["verdict", "episodes"], sorted(verdicts.items()))
        + _table(["problem", "level", "domain", "correct", "grade", "verdicts"], problem_rows)
        + note)))
    return sections
