"""The `packages` suite: research task packages (published NatureBench layout) with a
hidden evaluator, scored against the published state of the art."""

from ...core.suite import SuiteEntry, lazy_exports

#: The suite's row in the registry, listed in discoverygym.suites.ENTRIES under NAME.
NAME = "packages"
ENTRY = SuiteEntry("discoverygym.suites.packages:PackagesSuite", "Packages",
                   cli="discoverygym.suites.packages.cli:package_app",
                   cli_name="package",
                   agents="discoverygym.suites.packages.baselines",
                   options=("packages", "task", "time_limit_s", "protocol", "environment"))

# The suite's classes load on first use, so that reading the row stays cheap.
__getattr__ = lazy_exports(__name__, {"PackagesSuite": ".suite"})
__all__ = ["ENTRY", "NAME", "PackagesSuite"]
