"""Science that more than one suite needs: Kepler's equation (`kepler`), the Keplerian
radial-velocity model and fitter (`rv_kepler`, `rv_fit`), the RV-with-activity fitters
(`rv_activity`), relative-orbit fitting (`orbit_fit`) and the 2D Navier-Stokes solver
(`fluid_solver`). It imports nothing of the package, so any suite may use it without
importing another suite."""

import os

# On a GPU, JAX would grab 75% of its memory in every process that uses it (the fluid
# solver is JAX), so a second runner worker would run out at once. Allocate on demand
# instead, as mad's suite does (an explicit setting by the user wins).
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
