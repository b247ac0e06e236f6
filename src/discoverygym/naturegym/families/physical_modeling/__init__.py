"""Physical modeling: generated families from the project's simulators of orbits, stars and flows."""
