"""`discoverygym report` for a gravity run: the suite's section plots each episode's
observed times (kept in the record) over the true separation curve."""

from __future__ import annotations

from typing import Any

import numpy as np

from discoverygym.core import get_suite
from discoverygym.report.html import build_report
from discoverygym.run import run_episodes
from discoverygym.suites.gravity.report import MAX_EPISODES_PLOTTED, SECTION_TITLE


def _play_uniform_five(spec: dict[str, Any]) -> dict[str, Any]:
    """A throwaway agent: five equally spaced observations, then a guess."""
    episode = get_suite("gravity").episode(spec["task_id"], seed=spec["seed"],
                                           **spec["options"])
    view = episode.view()
    end = view.workspace()["window"][1]
    view.call("observe", {"times": [float(t) for t in np.linspace(0.0, end, 5)]})
    view.call("submit", {"answer": 1.0e30})
    return episode.record(agent="five").to_dict()


def test_report_shows_the_observed_times(tmp_path):
    specs = get_suite("gravity").episodes(tasks="mass_star1", worlds="A,B-yrAU")
    result = run_episodes(specs, out_dir=tmp_path, job=_play_uniform_five, who="five",
                          executor="serial", show_progress=False)
    assert len(result.records) == 2
    for record in result.records:
        times = record["details"]["observed_times"]
        assert len(times) == 5 and times[0] == 0.0
    page = build_report(tmp_path)
    assert SECTION_TITLE in page
    section = page.split(SECTION_TITLE, 1)[1]
    assert section.count("<img") >= 2 and "data:image/png;base64," in section
    assert "mass_star1 · B-yrAU · 5 obs" in section


def test_report_plots_at_most_a_dozen_episodes():
    records = [{"task_id": "period", "world": "C", "options": {"world": "C"},
                "protocol": "budget-obs-100", "passed": i % 2 == 0,
                "details": {"observed_times": [0.0, 1.0e6 * (i + 1)]}} for i in range(15)]
    [(title, fragment)] = get_suite("gravity").report_sections(records)
    assert title == SECTION_TITLE
    assert fragment.count("<img") == MAX_EPISODES_PLOTTED
    assert get_suite("gravity").report_sections([]) == []


def test_plotted_episodes_are_failures_first_and_spread_over_tasks():
    from discoverygym.suites.gravity.report import choose_episodes

    records = ([{"task_id": "period", "passed": True, "n": i} for i in range(6)]
               + [{"task_id": "mass_star1", "passed": False, "n": i} for i in range(3)]
               + [{"task_id": "eccentricity", "passed": False, "n": i} for i in range(2)]
               + [{"task_id": "apoastron", "passed": True, "n": 0}])
    chosen = choose_episodes(records, 6)
    assert [(r["task_id"], r["n"]) for r in chosen] == [
        ("mass_star1", 0), ("eccentricity", 0), ("mass_star1", 1), ("eccentricity", 1),
        ("mass_star1", 2), ("period", 0)]
    assert len(choose_episodes(records, 50)) == len(records)
    assert choose_episodes([], 4) == []
