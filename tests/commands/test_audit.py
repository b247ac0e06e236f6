"""`discoverygym audit`: every shipped suite, package and problem set passes it, and the
audit does find what it looks for (an attack that gets through is a finding)."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from discoverygym.audit import audit
from discoverygym.cli import app
from discoverygym.core import bounded
from discoverygym.suites.packages.shipped import CATALOG


@pytest.mark.parametrize("suite", ["gravity", "stargazer", "mad", "tpbench", "packages"])
def test_every_shipped_suite_passes_the_audit(suite):
    result = CliRunner().invoke(app, ["audit", suite, "--json"], env={"COLUMNS": "200"})
    # the sandbox announces its level on stderr, which the test runner mixes in
    outcomes, _ = json.JSONDecoder().raw_decode(result.output[result.output.index("[\n"):])
    findings = [o for o in outcomes if not o["ok"]]
    assert result.exit_code == 0 and findings == [], findings
    families = {o["family"] for o in outcomes}
    # issue #28 item 7: the rebuild, the sandbox at each level, the readers, held
    assert {"arguments", "rebuild", "sandbox", "readers"} <= families
    if suite == "packages":
        assert {"packages"} <= families and len(outcomes) > 20
    if suite == "tpbench":
        assert {"tpbench", "tpbench-levels"} <= families
    rebuild = [o["observed"] for o in outcomes if o["family"] == "rebuild"]
    public = suite in ("tpbench", "packages")
    assert all(("public by nature" in text) == public for text in rebuild), rebuild


def test_a_package_without_a_split_is_a_finding(tmp_path):
    root = tmp_path / "pkgs" / "gravity-force-law"
    shutil.copytree(CATALOG / "gravity-force-law", root)
    meta = json.loads((root / "metadata.json").read_text())
    for entry in meta["performance_entries"]:
        entry.pop("split", None)
    (root / "metadata.json").write_text(json.dumps(meta))
    result = CliRunner().invoke(app, ["audit", "packages", "--package", str(root.parent),
                                      "--no-interpreter"])
    assert result.exit_code == 1 and "FINDING" in result.output
    assert "feedback" in result.output


def test_without_bounded_arguments_the_audit_finds_the_holes(monkeypatch):
    """The argument attacks are real: with the bounds check switched off, 10**400 is
    accepted by gravity's submit (the episode ends) and the audit says so."""
    monkeypatch.setattr(bounded, "check_value", lambda *a, **k: None)
    from discoverygym.core import tools

    monkeypatch.setattr(tools, "check_value", lambda *a, **k: None)
    outcomes = audit("gravity", interpreter=False)
    findings = [o.attack for o in outcomes if not o.ok]
    assert any("10**400" in f for f in findings), findings
