"""The gravity suite's random streams, named in one place (the convention: core/streams.py).
Gravity's are ASCII tags. The values are fixed: changing one changes every record that
uses it."""

GRAVITY_PROCEDURAL_WORLD = 0x67726176  # "grav": a procedural world from --world-seed
GRAVITY_WINDOW = 0x77696E64            # "wind": the leak-free observation window
GRAVITY_SCALE = 0x7363616C             # "scal": the leak-free mass and length scale
GRAVITY_BOUND_TWIN = 0x626F756E        # "boun": is_bound asks the world or its twin
GRAVITY_LAW_TWIN = 0x6C617774          # "lawt": a procedural kepler_3rd_law asks the world or its other-law twin
