"""How an episode's random streams are named (the numbers live with each suite).

A stream is `numpy.random.default_rng([seed, ..., STREAM])` (or `[seed, STREAM, ...]`,
as each call site shows): the episode seed first, then whatever else keys it (a world's
physics, a trial), and one number named in the suite's own `streams.py`
(`suites/<suite>/streams.py`), so that two draws of a suite never share a stream by
accident. The values are fixed: changing one changes every record that uses it. A suite
that draws no episode randomness has no such module. Suite modules never key a generator
with a bare number (tests/core/test_core_contract.py checks both rules).

With a key (core/keys.py) every stream starts from the keyed draw seed HMAC(key, suite,
task, seed) instead of the public seed; the streams stay as named by the suite."""
