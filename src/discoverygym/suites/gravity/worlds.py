"""The worlds: two stars, their initial conditions, the force law, how long they are
watched and in which units they are shown.

The 16 published worlds of Gravity-Bench-v1 are listed in `PUBLISHED_WORLDS`;
`procedural_world(seed)` draws a new one from documented priors (see README). The
default leak-free setup plays a published world with its window (`leak_free_window`)
and scale (`leak_free_scale`) drawn from the seed, and asks a boundness question of it
or of its mirrored twin (`mirrored_boundness`, `mirror_coin`); on a procedural world it
asks a boundness or a Kepler's-law question of it or of its twin (`mirrored_law`)."""

from __future__ import annotations

import json
import math
import zlib
from dataclasses import asdict, dataclass, replace

import numpy as np

from . import streams
from .constants import AU_M, G_SI, MSUN_KG, UNIT_SYSTEMS, UnitSystem

Vec3 = tuple[float, float, float]
_ZERO: Vec3 = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class WorldSpec:
    """One two-body world, all inputs in SI.

    `force_alpha` None means Newtonian gravity; a number means the law
    F = G m1 m2 / r^(2 + alpha) *replaces* Newton's. `drag_tau_s` adds the linear
    drag a_i = -v_i / tau to both stars (velocities in the frame of the data).
    The run lasts `end_periods` Keplerian periods or `end_time_s` seconds."""

    id: str
    m1_kg: float
    m2_kg: float
    star1_pos_m: Vec3
    star2_pos_m: Vec3
    eccentricity: float
    end_periods: float | None = None
    end_time_s: float | None = None
    drift_ms: Vec3 = _ZERO
    drag_tau_s: float | None = None
    force_alpha: float | None = None
    units: str = "SI"

    # ---- derived facts -------------------------------------------------------------
    @property
    def total_mass_kg(self) -> float:
        return self.m1_kg + self.m2_kg

    @property
    def is_bound(self) -> bool:
        """With the initial-condition recipe, e is the orbit's eccentricity: e < 1 is bound."""
        return self.eccentricity < 1.0

    @property
    def newtonian(self) -> bool:
        return self.force_alpha is None

    @property
    def has_drag(self) -> bool:
        return self.drag_tau_s is not None

    @property
    def has_drift(self) -> bool:
        return any(v != 0.0 for v in self.drift_ms)

    @property
    def conservative_newtonian(self) -> bool:
        """Plain Newtonian two-body motion (no drag, no modified law)."""
        return self.newtonian and not self.has_drag

    @property
    def unit_system(self) -> UnitSystem:
        return UNIT_SYSTEMS[self.units]

    @property
    def initial_separation_m(self) -> float:
        return float(np.linalg.norm(np.subtract(self.star2_pos_m, self.star1_pos_m)))

    @property
    def alpha(self) -> float:
        """The exponent offset of the force law (0 for Newton)."""
        return 0.0 if self.force_alpha is None else self.force_alpha

    def circular_speed_ms(self) -> float:
        """Relative circular speed at the initial separation under the world's own law:
        v_c^2 / r = G M / r^(2 + alpha)."""
        r0 = self.initial_separation_m
        return math.sqrt(G_SI * self.total_mass_kg / r0 ** (1.0 + self.alpha))

    def kepler_period_s(self) -> float:
        """Newtonian period 2 pi sqrt(a^3 / G M) of the initial relative orbit, where the
        recipe gives a = r0 / (1 - e^2). For a modified law, the same formula with the
        effective G M / a^alpha (an estimate, used for sampling and procedural priors)."""
        if not self.is_bound:
            raise ValueError(f"world {self.id} is unbound; it has no period")
        a = self.initial_separation_m / (1.0 - self.eccentricity**2)
        gm = G_SI * self.total_mass_kg / a**self.alpha
        return 2.0 * math.pi * math.sqrt(a**3 / gm)

    @property
    def duration_s(self) -> float:
        """Length of the observation window in seconds."""
        if self.end_time_s is not None:
            return float(self.end_time_s)
        assert self.end_periods is not None
        return float(self.end_periods * self.kepler_period_s())

    def initial_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Positions and velocities (2 x 3 arrays, SI) at t = 0, by the spec's recipe:
        relative speed v_c along the tangent rel x z-hat plus e v_c along the radial
        direction, split by mass so the barycentre is at rest, then the drift added."""
        p1 = np.asarray(self.star1_pos_m, dtype=float)
        p2 = np.asarray(self.star2_pos_m, dtype=float)
        rel = p2 - p1
        r0 = float(np.linalg.norm(rel))
        radial = rel / r0
        tangent = np.cross(rel, [0.0, 0.0, 1.0])
        tangent /= np.linalg.norm(tangent)
        v_c = self.circular_speed_ms()
        v_rel = v_c * tangent + self.eccentricity * v_c * radial
        m1, m2, m = self.m1_kg, self.m2_kg, self.total_mass_kg
        drift = np.asarray(self.drift_ms, dtype=float)
        v1 = -m2 / m * v_rel + drift
        v2 = m1 / m * v_rel + drift
        return np.stack([p1, p2]), np.stack([v1, v2])

    def key(self) -> dict[str, object]:
        """Every input that changes the trajectory (used for the cache key)."""
        data = asdict(self)
        data.pop("units")  # the display units do not change the SI trajectory
        data.pop("id")
        return data


def _drift(speed_ms: float, direction: tuple[float, float]) -> Vec3:
    d = np.array([direction[0], direction[1], 0.0])
    d = speed_ms * d / np.linalg.norm(d)
    return (float(d[0]), float(d[1]), 0.0)


def _published() -> dict[str, WorldSpec]:
    msun = MSUN_KG
    b = WorldSpec("B", 9.6 * msun, 3.1 * msun, (-1e12, 6e12, 0.0), (-1e12, 3e12, 0.0), 0.6,
                  end_periods=10)
    ell = WorldSpec("ELL", 3.1 * msun, 0.18 * msun, (4e10, -4e10, 0.0), (1.5e11, -7e10, 0.0),
                    0.93, end_periods=10)
    drag1 = WorldSpec("DRAG1", 7.7 * msun, 4.9 * msun, (1e11, 1e11, 0.0), (1.5e11, 7e11, 0.0),
                      0.55, end_time_s=7e8, drag_tau_s=1.7e9)
    mg197 = WorldSpec("MG197", 10.1 * msun, 5.6 * msun, (5e10, 1e11, 0.0), (7.5e10, 3e10, 0.0),
                      0.8, end_time_s=9e7, force_alpha=-0.03)
    worlds = [
        WorldSpec("A", 21.3 * msun, 3.1 * msun, (-5e12, -7e12, 0.0), (-3e12, -8e12, 0.0), 0.6,
                  end_periods=10),
        b,
        WorldSpec("C", 0.18 * msun, 0.63 * msun, (7e11, 2e11, 0.0), (2e11, 1e11, 0.0), 0.6,
                  end_periods=10),
        WorldSpec("PM1", 9.6 * msun, 3.1 * msun, (4e12, 3e12, 0.0), (2e12, 3e12, 0.0), 0.8,
                  end_periods=10, drift_ms=_drift(1e3, (1, 1))),
        WorldSpec("PM2", 9.6 * msun, 3.1 * msun, (4e11, -4e11, 0.0), (7e11, -6e11, 0.0), 0.9,
                  end_periods=10, drift_ms=_drift(1e3, (2, -1))),
        replace(b, id="B-yrAU", units="yr-AU"),
        replace(b, id="B-cgs", units="cgs"),
        ell,
        replace(ell, id="ELL1", end_periods=1),
        drag1,
        replace(drag1, id="DRAG2", end_time_s=5e8, drag_tau_s=8.3e8),
        replace(drag1, id="DRAG2-PM", end_time_s=5e8, drag_tau_s=8.3e8,
                drift_ms=_drift(1e4, (1, 1))),
        WorldSpec("UNB", 10.1 * msun, 5.6 * msun, (-1e11, 7e11, 0.0), (1.5e11, 7e10, 0.0), 1.5,
                  end_time_s=1e8),
        mg197,
        replace(mg197, id="MG203", end_time_s=2.3e8, force_alpha=0.03),
        replace(mg197, id="MG197-PM", star1_pos_m=(5e10, 1e10, 0.0), end_time_s=2.4e7,
                drift_ms=_drift(1e4, (1, 1))),
    ]
    return {w.id: w for w in worlds}


PUBLISHED_WORLDS: dict[str, WorldSpec] = _published()
WORLD_IDS: tuple[str, ...] = tuple(PUBLISHED_WORLDS)

PROCEDURAL_KINDS = ("newtonian", "drag", "modified", "unbound")
PROCEDURAL_KIND_WEIGHTS = (0.6, 0.15, 0.15, 0.1)
#: The procedural prior of a modified law's |alpha|, which a Newtonian world's
#: other-law twin (mirrored_law) draws from too.
MODIFIED_ALPHA = (0.01, 0.05)


def _procedural_rng(seed: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), streams.GRAVITY_PROCEDURAL_WORLD])


def _draw_kind(rng: np.random.Generator) -> str:
    return str(rng.choice(PROCEDURAL_KINDS, p=PROCEDURAL_KIND_WEIGHTS))


def procedural_kind(seed: int) -> str:
    """The kind of the procedural world of `seed` (its first draw), without the rest."""
    return _draw_kind(_procedural_rng(seed))


def procedural_world(seed: int) -> WorldSpec:
    """A new world drawn from the suite's priors, deterministic by `seed` (see README):

    kind: Newtonian 60 %, drag 15 %, modified law 15 %, unbound 10 %;
    masses log-uniform in [0.1, 30] Msun each; initial separation r0 log-uniform in
    [0.1, 30] AU, at a uniform angle, star1 anywhere in a box of +-10 r0; e uniform in
    [0.1, 0.9] (bound) or [1.1, 2.0] (unbound); units SI, yr-AU or cgs (equal odds);
    drift 0 (half the time) or log-uniform in [10, 1e4] m/s at a uniform angle;
    Newtonian: U[3, 10] periods (not whole, so the window does not reveal P); drag: tau = U[10, 40] P, end = U[3, 6] P;
    modified: alpha = +-U[0.01, 0.05], end = U[4, 8] P; unbound: end = U[5, 20] r0/v0."""
    rng = _procedural_rng(seed)
    kind = _draw_kind(rng)
    m1, m2 = (float(np.exp(rng.uniform(np.log(0.1), np.log(30.0)))) * MSUN_KG for _ in range(2))
    r0 = float(np.exp(rng.uniform(np.log(0.1), np.log(30.0)))) * AU_M
    angle = rng.uniform(0.0, 2.0 * np.pi)
    p1 = rng.uniform(-10.0, 10.0, size=2) * r0
    p2 = p1 + r0 * np.array([np.cos(angle), np.sin(angle)])
    ecc = float(rng.uniform(1.1, 2.0) if kind == "unbound" else rng.uniform(0.1, 0.9))
    units = str(rng.choice(list(UNIT_SYSTEMS)))
    drift: Vec3 = _ZERO
    if rng.uniform() < 0.5:
        speed = float(np.exp(rng.uniform(np.log(10.0), np.log(1e4))))
        phi = rng.uniform(0.0, 2.0 * np.pi)
        drift = _drift(speed, (np.cos(phi), np.sin(phi)))
    base = WorldSpec(f"proc-{int(seed)}", m1, m2, (float(p1[0]), float(p1[1]), 0.0),
                     (float(p2[0]), float(p2[1]), 0.0), ecc, drift_ms=drift, units=units)
    # the kind-specific draws come last so the shared draws above stay the same per seed
    if kind == "newtonian":
        # not a whole number of periods: the window's end must not give the period away
        return replace(base, end_periods=float(rng.uniform(3.0, 10.0)))
    if kind == "drag":
        period = base.kepler_period_s()
        return replace(base, drag_tau_s=float(rng.uniform(10, 40) * period),
                       end_time_s=float(rng.uniform(3, 6) * period))
    if kind == "modified":
        alpha = float(rng.choice([-1.0, 1.0]) * rng.uniform(*MODIFIED_ALPHA))
        world = replace(base, force_alpha=alpha)
        return replace(world, end_time_s=float(rng.uniform(4, 8) * world.kepler_period_s()))
    v0 = base.circular_speed_ms() * math.hypot(1.0, ecc)
    return replace(base, end_time_s=float(rng.uniform(5, 20) * r0 / v0))


#: The protocol setup of the published worlds: "leak-free" (default) draws each world's
#: window and scale from the episode seed, mirrors the yes/no boundness question with
#: even odds and uses the stricter leak-free thresholds; "published" is Gravity-Bench-v1
#: exactly (its windows, scales, pairs and thresholds).
SETUPS = ("leak-free", "published")


LEAK_FREE_PERIODS = (3.0, 12.0)  # log-uniform; ELL1's one-period window: (1.1, 1.9)


def leak_free_window(world: WorldSpec, seed: int) -> WorldSpec:
    """The world with its window redrawn from `seed` when the published one is a whole
    number of orbital periods (then `period = window_end / 10` answers every period
    task with no observation). Ten-period worlds get a log-uniform number of periods in
    LEAK_FREE_PERIODS. That is wide enough that the best blind guess, window_end / n
    for any fixed n, is within 5 % of the period about 7 % of the time
    (ln(1.05/0.95) / ln 4). The one-period world ELL1 gets U[1.1, 1.9] periods, so it
    keeps at least what its tasks need. Windows given in seconds are left alone: none
    is a whole number of periods (DRAG1 5.68, DRAG2 4.06, MG197 10.30, MG203 12.05,
    MG197-PM 9.60), and their tasks concern drag or the force law, not the period."""
    if world.end_periods is None:
        return world
    # keyed by the physics, not the id: B, B-yrAU and B-cgs keep one window per seed
    rng = _physics_rng(world, seed, streams.GRAVITY_WINDOW)
    if world.end_periods >= 5:
        low, high = LEAK_FREE_PERIODS
        periods = math.exp(rng.uniform(math.log(low), math.log(high)))
    else:
        periods = float(world.end_periods) * rng.uniform(1.1, 1.9)
    return replace(world, end_periods=float(periods))


def _physics_rng(world: WorldSpec, seed: int, salt: int) -> np.random.Generator:
    """A generator keyed by the seed and the world's physics (not its id or units)."""
    physics = json.dumps(world.key(), sort_keys=True, default=str).encode()
    return np.random.default_rng([int(seed), zlib.crc32(physics), salt])


#: Range of the leak-free scale factors on mass and on length (each log-uniform).
LEAK_FREE_SCALE = (1 / 3, 3.0)


def leak_free_scale(world: WorldSpec, seed: int) -> WorldSpec:
    """The world redrawn at another scale from `seed`: masses times mu and lengths times
    lam, each log-uniform in LEAK_FREE_SCALE, so that a fixed guess (a Sun-like constant)
    cannot sit near one published world's answer on every seed. Newtonian gravity (with
    or without drag) has no scale of its own: with times multiplied by
    T = sqrt(lam^3 / mu) and speeds by lam / T, the scaled world is the same orbit seen in
    other units. Drift, drag timescale and a window given in seconds scale with it;
    e and a window given in periods do not. A modified law F ~ r^-(2 + alpha) has a scale
    of its own, so those worlds are left alone (their answers, alpha and a yes/no, have
    no unit anyway)."""
    if not world.newtonian:
        return world
    rng = _physics_rng(world, seed, streams.GRAVITY_SCALE)
    low, high = (math.log(x) for x in LEAK_FREE_SCALE)
    mu, lam = (math.exp(rng.uniform(low, high)) for _ in range(2))
    time_factor = math.sqrt(lam**3 / mu)
    speed_factor = lam / time_factor

    def scaled(vec: Vec3, factor: float) -> Vec3:
        return (vec[0] * factor, vec[1] * factor, vec[2] * factor)

    return replace(
        world, m1_kg=world.m1_kg * mu, m2_kg=world.m2_kg * mu,
        star1_pos_m=scaled(world.star1_pos_m, lam), star2_pos_m=scaled(world.star2_pos_m, lam),
        drift_ms=scaled(world.drift_ms, speed_factor),
        end_time_s=None if world.end_time_s is None else world.end_time_s * time_factor,
        drag_tau_s=None if world.drag_tau_s is None else world.drag_tau_s * time_factor)


def mirrored_boundness(world: WorldSpec) -> WorldSpec:
    """The world's twin of the other kind: e -> 1/e turns the recipe's bound orbit into
    an unbound one and back (same stars, same start, speed sqrt(1 + e^2) v_c on either
    side of the escape speed sqrt(2) v_c). The twin keeps the window's length in seconds,
    so the window says nothing about which of the two is played."""
    if world.eccentricity <= 0.0:
        raise ValueError(f"world {world.id} is circular (e = 0): it has no mirrored twin")
    kind = "unbound" if world.is_bound else "bound"
    return replace(world, id=f"{world.id}-{kind}", eccentricity=1.0 / world.eccentricity,
                   end_periods=None, end_time_s=world.duration_s)


def mirror_coin(world_id: str, seed: int, stream: int = streams.GRAVITY_BOUND_TWIN) -> bool:
    """Even odds, from the seed and the world's id, that a yes/no question is asked of
    the world's twin instead (so B, B-yrAU and B-cgs are drawn apart). `stream` names
    the question: boundness (GRAVITY_BOUND_TWIN) or the law (GRAVITY_LAW_TWIN)."""
    rng = np.random.default_rng([int(seed), zlib.crc32(world_id.encode()), stream])
    return bool(rng.uniform() < 0.5)


#: The law twin's second draw (its alpha), after the coin that picks the twin.
_TWIN_ALPHA_DRAW = 1


def mirrored_law(world: WorldSpec, seed: int) -> WorldSpec:
    """The world's twin under the other law: a Newtonian world gets a modified law with
    alpha = +-U[0.01, 0.05] drawn from `seed` (the procedural prior), a modified-law
    world gets Newton's. Same stars, same start, same e (the recipe's speed follows the
    law in use, so the orbit keeps its shape), and the window's length in seconds, so
    the window says nothing about which of the two is played."""
    if world.has_drag:
        raise ValueError(f"world {world.id} has drag: its law twin is not defined")
    if world.newtonian:
        rng = np.random.default_rng([int(seed), zlib.crc32(world.id.encode()),
                                     streams.GRAVITY_LAW_TWIN, _TWIN_ALPHA_DRAW])
        low, high = MODIFIED_ALPHA
        alpha: float | None = float(rng.choice([-1.0, 1.0]) * rng.uniform(low, high))
        name = "modified"
    else:
        alpha, name = None, "newtonian"
    return replace(world, id=f"{world.id}-{name}", force_alpha=alpha, end_periods=None,
                   end_time_s=world.duration_s)


def get_world(world: str | None = None, world_seed: int | None = None) -> WorldSpec:
    """A published world by id, or the procedural world of `world_seed`."""
    if world_seed is not None:
        return procedural_world(int(world_seed))
    if isinstance(world, str) and world.startswith("proc-") and world[5:].isdigit():
        return procedural_world(int(world[5:]))
    if world is None or world not in PUBLISHED_WORLDS:
        from ...core import UnknownName

        raise UnknownName(f"Unknown gravity world {world!r}. Worlds: {', '.join(WORLD_IDS)}.")
    return PUBLISHED_WORLDS[world]
