"""Constants of the classical world, in one place. Simulation units: G = 1, lengths
in box units (the box is [-10, 10]^D), masses and times in the matching units.

Values from the MaD Physics paper (Jain et al. 2026) are marked `paper`; values the
paper leaves open are ours, marked `ours`, and listed in the suite README so they can
be swapped if the authors publish theirs."""

from __future__ import annotations

G = 1.0  # paper
SOFTENING = 1e-4  # paper: Plummer softening length
BOX_HALF_WIDTH = 10.0  # paper: the box is [-10, 10]^D
DT = 1e-3  # paper: semi-implicit Euler time step
T_MAX = 300.0  # paper
BUDGET = 200.0  # paper: cost units per episode
N_QUERIES = 5  # paper
QUERY_HORIZON = 30.0  # ours: query times are T_max + U(0, QUERY_HORIZON], sorted (paper protocol)
# ours: the horizon of the default (discovery) protocol, after the fresh preparation.
# Its initial state is exact, so chaos amplifies only errors of the law; the anisotropic
# inertia builds up from S = 0 and moves the spheres ~10x more by 20 units than by 10
# (README, Calibration)
DISCOVERY_QUERY_HORIZON = 20.0

RADIUS_RANGE = (0.1, 0.5)  # paper: radius ~ U(0.1, 0.5)
MASS_RANGE = (0.5, 5.0)  # paper: mass ~ U(0.5, 5); the floor 0.5 keeps every M positive
VELOCITY_SIGMA = 1.0  # paper: each velocity component ~ N(0, 1)
PLACEMENT_GAP = 0.05  # ours: minimum surface gap between spheres at t = 0

RIPPLE_AMPLITUDE = 1.0  # paper: A
RIPPLE_WAVELENGTH = 10.0  # paper: lambda_g
RIPPLE_PHASE = 0.0  # paper: phi
INERTIA_DECAY_RATE = 0.1  # ours: lambda in dS/dt = -lambda S + a a^T (option `inertia_decay`); see README
KAPPA_GRID = (0.0, 5.0, 10.0, 15.0, 20.0)  # paper: kappa values of the inference variant

SNAPSHOT_STRIDE_STEPS = 1000  # ours: the cached trajectory keeps every 1000th step (1 time unit)
DEFAULT_N_PARTICLES = 3  # paper
DEFAULT_DIM = 3  # ours: spheres in 3D unless --dim 2

# The law score (law_rollout.py): held-out initial states rolled out from t = 0.
LAW_SCORE_STATES = 8  # ours: states per rollout (one batch)
LAW_SCORE_HORIZON = 10.0  # ours: time units rolled out (positions compared every unit)
