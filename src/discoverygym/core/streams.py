"""Every random stream an episode draws from, named in one place.

A stream is `numpy.random.default_rng([seed, ..., STREAM])` (or `[seed, STREAM, ...]`,
as each call site shows): the episode seed first, then whatever else keys it (a world's
physics, a trial), and one of the numbers below, so that two draws never share a stream
by accident. The values are fixed: changing one changes every record that uses it.
Gravity's are ASCII tags ("grav", "wind", ...); mad's and tpbench's are small numbers.
(Stargazer draws no episode randomness: its bank generator takes `--bank-seed` whole.)

With a key (core/keys.py) every stream starts from the keyed draw seed HMAC(key, suite,
task, seed) instead of the public seed; the streams stay as named here, and a keyed
stargazer bank task is drawn from the keyed seed (`bank.keyed_bank_task`)."""

# gravity
GRAVITY_PROCEDURAL_WORLD = 0x67726176  # "grav": a procedural world from --world-seed
GRAVITY_WINDOW = 0x77696E64            # "wind": the leak-free observation window
GRAVITY_SCALE = 0x7363616C             # "scal": the leak-free mass and length scale
GRAVITY_BOUND_TWIN = 0x626F756E        # "boun": is_bound asks the world or its twin
GRAVITY_LAW_TWIN = 0x6C617774          # "lawt": a procedural kepler_3rd_law asks the world or its other-law twin

# mad
MAD_WORLD_INIT = 1         # a world's initial state (particles, packets, fields)
MAD_TRIAL = 2              # a trial's initial state in the in-context-learning variant
MAD_NOISE = 3              # measurement noise
MAD_LAW_INPUTS = 4         # inputs on which describe_law's function is checked
MAD_LAW_CHOICE = 5         # which law an episode with a hidden law gets
MAD_FLUID_QUERIES = 6      # the fluid world's query draw
MAD_LAW_SCORE = 7          # held-out states of the law score (law_rollout.py)
MAD_PREPARATION = 8        # the fresh preparation revealed with the questions (discovery)

# tpbench
TPBENCH_TEST_INPUTS = 2718  # the seeded samples of a problem's test plan
