"""The mad suite's random streams, named in one place (the convention: core/streams.py).
The values are fixed: changing one changes every record that uses it."""

MAD_WORLD_INIT = 1         # a world's initial state (particles, packets, fields)
MAD_TRIAL = 2              # a trial's initial state in the in-context-learning variant
MAD_NOISE = 3              # measurement noise
MAD_LAW_INPUTS = 4         # inputs on which describe_law's function is checked
MAD_LAW_CHOICE = 5         # which law an episode with a hidden law gets
MAD_FLUID_QUERIES = 6      # the fluid world's query draw
MAD_LAW_SCORE = 7          # held-out states of the law score (law_rollout.py)
MAD_PREPARATION = 8        # the fresh preparation revealed with the questions (discovery)
