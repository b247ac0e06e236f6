"""The tpbench suite's random streams, named in one place (the convention:
core/streams.py). The values are fixed: changing one changes every record that uses it."""

TPBENCH_TEST_INPUTS = 2718  # the seeded samples of a problem's test plan
