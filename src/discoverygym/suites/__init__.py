"""The built-in suites, one folder each.

Each suite's __init__ declares its registry row (`NAME`, `ENTRY`, a core.SuiteEntry)
and loads its classes only on first use. `ENTRIES` lists them in the order suites are
listed; core's registry loads this package first, like a plugin
(`core.suite.BUILTIN_SUITES_PACKAGE`), so core names no suite. A new suite is a folder
here (see the README's layout) and one name in the tuple below."""

from . import gravity, mad, packages, stargazer, tpbench

#: The built-in suites' rows by name, in the order they are listed.
ENTRIES = {suite.NAME: suite.ENTRY for suite in (gravity, stargazer, mad, tpbench, packages)}
