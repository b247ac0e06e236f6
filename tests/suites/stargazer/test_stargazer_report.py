"""`discoverygym report` on a stargazer run shows the suite's RV plots."""

from __future__ import annotations

from discoverygym.core import get_suite, register_agents
from discoverygym.report.html import build_report
from discoverygym.run import run_episodes

register_agents("stargazer", {"oracle": "discoverygym.suites.stargazer.oracle:Oracle"})


def test_report_has_the_rv_plots(tmp_path):
    suite = get_suite("stargazer")
    specs = suite.episodes(tasks=("easy-000", "real-018"))
    result = run_episodes(specs, out_dir=tmp_path, agent="oracle", executor="serial",
                          show_progress=False)
    assert len(result.records) == 2
    for record in result.records:
        assert len(record["details"]["best_planets"]) == record["details"]["n_found"]
    text = build_report(tmp_path)
    assert "RV data, best submission and truth" in text
    assert text.count('alt="easy-000') == 1 and text.count('alt="real-018') == 1
    assert text.count('<img class="plot"') >= 2


def test_report_sections_handle_an_episode_without_submission():
    suite = get_suite("stargazer")
    ep = suite.episode("easy-001")
    ep.call("end", {})
    record = ep.record(agent="none").to_dict()
    sections = suite.report_sections([record])
    assert len(sections) == 1 and "<img" in sections[0][1]
