"""One frozen configuration for an inversion: model, physics and training settings.

Units: ``mu_ref`` in Pa; Fourier scales in cycles per field of view (nondimensional);
``steps``, ``sync_interval`` and ``pde_warmup`` in training steps; ``plateau_patience``
in blocks. The command line maps its options onto these fields (no second list of
defaults).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from helmholtz_pinn import laws
from helmholtz_pinn.errors import ConfigError

ACTIVATIONS = ("tanh", "sin")
WEIGHTINGS = ("noise", "uniform")
AUX_NETWORKS = ("mu", "u")


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings of one PINN inversion. Why each default is what it is: docs/defaults.md.

    Attributes:
      width: hidden width of the u-network; None: 256 for 2-D data (slicewise fits
        too), 512 for one 3-D fit; 64 in the small fit (see steps), as are mu_width 32,
        n_features 64 and batch_size 512 (1024 for three components).
      depth: hidden layers of the u-network.
      mu_width: hidden width of the mu-network (which also carries the navier pressure in
        2-D); None: 64 for 2-D data, 128 for one 3-D fit.
      mu_depth: hidden layers of the mu-network; None: 2 for 2-D data, 3 for one 3-D fit.
      n_features: Fourier frequencies per network (the embedding has 2 * n_features);
        None: 128 for 2-D data, 256 for one 3-D fit.
      sigma_u: Fourier scale of the u-network, cycles per field of view; None:
        sigma_factor_u times the field of view over the shortest expected wavelength.
      sigma_mu: the same for the mu-network, with sigma_factor_mu.
      sigma_factor_u: factor of the automatic sigma_u; None: 1.0 for 2-D data, 0.5 for
        one 3-D fit, for 2-D data whose best field's noise fraction is at least 0.15 and
        for 2-D data below 14 voxels per shortest wavelength estimated from u; 0.1 for
        noisy data (noise fraction at least 0.02) of one or two components sampled with
        fewer than 14 voxels per shortest wavelength (0.05 from a noise fraction of
        0.15), and of three components below 9 voxels.
      sigma_factor_mu: factor of the automatic sigma_mu.
      sigma_ratio_z: 3-D fits: the Fourier scale along the slice axis over the in-plane
        scale, both networks (1 is isotropic); None: 0.25, and for clean data fitted
        with u-networks of at most 64 wide (the CPU size) the wave's through-plane over
        its in-plane wavenumber estimated from u, within 0.25-1.
      activation: hidden activation, tanh or sin.
      pde: the residual form: helmholtz (mu Lap u + rho omega^2 u = 0), hetero
        (div(mu grad u) + rho omega^2 u = 0), curl (hetero on q = curl u, three
        components), navier (the elastic Navier-Cauchy equation with a free pressure), weak
        (the elastic equation integrated against divergence-free test fields on small
        patches: no pressure, first derivatives only) or auto (navier for three-component
        data, hetero otherwise).
      mu_model: the viscoelastic law, a module of helmholtz_pinn.laws (each states its
        equation mu(omega); some need two or more frequencies), or auto (chosen by the
        data: one law of helmholtz_pinn.laws.auto() is fitted and every law's modulus is
        fitted to its wave; the law that satisfies the PDE at every frequency more alike
        is kept, and the other law is fitted too where that does not keep the first or
        the form has a pressure (navier: both laws fitted), helmholtz_pinn.assess.laws;
        one frequency needs no law: an independent modulus per frequency).
      aux_network: the network that outputs the navier pressure, u or mu; None: mu for
        2-D data, u for one 3-D fit.
      weighting: noise (each frequency's and component's field weighs 1 / n^2, n its
        estimated noise RMS over its RMS, at least noise_floor) or uniform.
      noise_floor: the smallest noise level assumed, a fraction of the RMS of the
        strongest component at each frequency.
      mu_ref: reference modulus, Pa, used to nondimensionalise; None: estimated from the
        data by smoothed algebraic inversion.
      steps: Adam training steps (rounded up to a multiple of sync_interval); with an
        L-BFGS phase the Adam phase ends at lbfgs_from; None: 10000, and for noisy data
        (noise fraction at least 0.02) sampled with fewer than 14 voxels per shortest
        wavelength, or 2-D with fewer than 2000 mask voxels, the small fit of
        cpu_settings (3000 steps, 5000 for three components;
        its networks, batch and rate too, where not set).
      sync_interval: steps per compiled block; the loss is read once a block.
      batch_size: voxels drawn per step; every voxel of the mask when at least their
        number; None: 2048, or the small fit's (see steps).
      learning_rate: Adam step size at the start; None: 1e-3, or the small fit's (see
        steps).
      lbfgs_steps: L-BFGS iterations after the Adam phase, on one fixed sample of
        lbfgs_points voxels; 0: none; None: 4000 (mu_model auto judges the laws after
        1000 and continues the kept fit to 4000) for one navier fit (one dataset, no
        ensemble) of clean data (the best field has a noise fraction below 0.02) whose
        steps exceed lbfgs_from and whose mask has at most lbfgs_points voxels (the
        sample is then the whole field), else none.
      lbfgs_from: the Adam step at which an L-BFGS phase takes over.
      lbfgs_points: voxels of the L-BFGS phase's sample (every voxel when fewer).
      tf32_steps: the first Adam steps, whose matmuls run in TF32 on a GPU's tensor cores
        (a 10-bit mantissa; faster steps), the later ones in float32 ("highest"; on a
        GPU, networks 512 wide or more: three bfloat16 products per matmul, relative
        error about 2e-5, fit.placement.float32_algorithm); the L-BFGS phase, the map
        and the checks are always float32 ("highest"); 0: no TF32 step; None: every
        Adam step when an L-BFGS phase follows, else 0. Applies
        on a GPU only (a CPU's matmuls are float32 at any precision), not where the user
        has set jax_default_matmul_precision ("highest" there: every program in
        float32), and not where an L-BFGS phase cannot run (several devices).
      pde_weight: weight of the PDE loss after the warm-up; None: 0.1, 0.3 for
        three-component volumes where noise meets coarse sampling or the noise fraction
        is 0.15 or more (fit.defaults.pde_weight).
      pde_warmup: steps over which the PDE weight ramps up linearly from 0.
      pde_margin: voxels at the field of view's in-plane edges (a specimen's free faces)
        whose PDE residual is left out (their data term stays; a mask's rim inside the
        field of view keeps its residual); None: for a 3-D navier fit a sixth of the
        shortest expected shear wavelength in voxels (at least 1), else 0.
      plateau_patience: blocks without a 1 % improvement before the rate is reduced.
      plateau_factor: the reduction: the rate is multiplied by this.
      min_lr: the rate never goes below this; a fit stalled there stops early.
      max_retries: divergence roll-backs (rate halved each time) before giving up.
      checkpoint_every: blocks between checkpoints, when a checkpoint folder is given;
        none sooner than a minute after the previous one (the last block, an early stop
        and an interrupt always write one).
      max_members_per_chunk: members (datasets or z-slices, times ensemble) trained at
        once, larger batches in chunks; None: from the free device memory.
      ensemble: independently seeded fits trained as one program; the result is their
        mean modulus and its standard deviation.
      ensemble_keep: members whose final loss is above this times the lowest are left out
        of the mean and named; inf keeps every member.
      metric_margin: voxels of the mask's rim left out of the accuracy metrics and the
        clinical medians (0 scores the whole mask); the fit is unchanged.
      seed: seeds the network initialisation and the collocation sampling.
    """

    width: int | None = None
    depth: int = 3
    mu_width: int | None = None
    mu_depth: int | None = None
    n_features: int | None = None
    sigma_u: float | None = None
    sigma_mu: float | None = None
    sigma_factor_u: float | None = None
    sigma_factor_mu: float = 0.5
    sigma_ratio_z: float | None = None
    activation: Literal["tanh", "sin"] = "tanh"
    pde: str = "auto"
    mu_model: str = "auto"
    aux_network: Literal["mu", "u"] | None = None
    weighting: Literal["noise", "uniform"] = "noise"
    noise_floor: float = 0.03
    mu_ref: float | None = None
    steps: int | None = None
    sync_interval: int = 100
    batch_size: int | None = None
    learning_rate: float | None = None
    lbfgs_steps: int | None = None
    lbfgs_from: int = 5000
    lbfgs_points: int = 16384
    tf32_steps: int | None = None
    pde_weight: float | None = None
    pde_warmup: int = 1000
    pde_margin: int | None = None
    plateau_patience: int = 5
    plateau_factor: float = 0.5
    min_lr: float = 1e-5
    max_retries: int = 3
    checkpoint_every: int = 10
    max_members_per_chunk: int | None = None
    ensemble: int = 1
    ensemble_keep: float = 2.0
    metric_margin: int = 0
    seed: int = 0

    def __post_init__(self):
        _choice("activation", self.activation, ACTIVATIONS)
        _choice("mu_model", self.mu_model, ("auto", *laws.available()))
        _choice("weighting", self.weighting, WEIGHTINGS)
        _choice("aux_network", self.aux_network, (*AUX_NETWORKS, None))
        for name in POSITIVE_INTS:
            _positive_int(name, getattr(self, name), optional=False)
        for name in OPTIONAL_POSITIVE_INTS:
            _positive_int(name, getattr(self, name), optional=True)
        for name in (*POSITIVE_FLOATS, *OPTIONAL_POSITIVE_FLOATS):
            value = getattr(self, name)
            if not (value is None and name in OPTIONAL_POSITIVE_FLOATS) and not value > 0:
                none = " or None" if name in OPTIONAL_POSITIVE_FLOATS else ""
                raise ConfigError(f"config.{name} must be > 0{none}; got {value!r}")
        for name in ("metric_margin", "pde_margin", "lbfgs_steps", "tf32_steps"):
            value = getattr(self, name)
            if not (value is None and name != "metric_margin") and not _int_at_least(value, 0):
                unit = {"lbfgs_steps": "iterations", "tf32_steps": "steps"}.get(name, "voxels")
                raise ConfigError(f"config.{name} must be an integer >= 0 {unit}; got {value!r}")
        if not self.ensemble_keep >= 1:
            raise ConfigError(
                f"config.ensemble_keep must be >= 1 (a factor on the lowest final loss) or "
                f"inf; got {self.ensemble_keep!r}"
            )
        weight = 0.0 if self.pde_weight is None else self.pde_weight
        if weight < 0 or self.pde_warmup < 0 or self.max_retries < 0:
            raise ConfigError("config.pde_weight, pde_warmup and max_retries must be >= 0")

    def replace(self, **overrides) -> Config:
        """A copy with ``overrides`` applied.

        Args:
          **overrides: field names and their new values.

        Returns:
          The new :class:`Config` (this one is frozen).

        Raises:
          ConfigError: an unknown field name (the message lists the valid ones).
        """
        unknown = set(overrides) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            valid = ", ".join(f.name for f in dataclasses.fields(self))
            raise ConfigError(f"unknown config option(s) {sorted(unknown)}; valid: {valid}")
        return dataclasses.replace(self, **overrides)

    @classmethod
    def requested(cls, config: Config | None, overrides: dict) -> Config:
        """The user's request: ``config`` (default ``Config()``) with ``overrides``
        applied (:meth:`replace`; an unknown name is a ConfigError)."""
        return (config or cls()).replace(**overrides)

    def ran(self, *, mu_model: str, steps: int, lbfgs_steps: int, tf32_steps: int) -> Config:
        """The settings that ran, as a Config (``Result.config``, ``config.json``, the
        checkpoints' settings): this request (its data-decided fields filled by the plan)
        with the law fitted, the Adam steps, the L-BFGS iterations and the TF32 steps
        that the plan decided (:meth:`helmholtz_pinn.fit.plan.Plan.settings`) filled in."""
        return self.replace(
            mu_model=mu_model, steps=steps, lbfgs_steps=lbfgs_steps, tf32_steps=tf32_steps
        )


def cpu_settings(n_comp: int) -> dict:
    """Config fields for a fit on a few CPU cores, minutes instead of hours: 64-wide
    networks (mu 32) and 64 Fourier features; for one or two components 3000 steps of 512
    voxels at a learning rate of 2e-3, for three-component data 5000 steps of 1024 at
    1e-3 (the elastic forms need more steps; at 3000 they fell behind a scalar fit of the
    same data). Why: docs/defaults.md. On a GPU the defaults take seconds: leave these out
    there. Fields given explicitly should be applied after these
    (``Config(**{**cpu, **mine})``).

    Args:
      n_comp: the displacement components of the data (1 to 3).

    Returns:
      Config field names and values (a dict for ``Config(**...)`` or ``invert(...)``).

    Raises:
      ConfigError: ``n_comp`` is not 1, 2 or 3.
    """
    if not _int_at_least(n_comp, 1) or n_comp > 3:
        raise ConfigError(f"n_comp must be 1, 2 or 3 components; got {n_comp!r}")
    networks = {"width": 64, "mu_width": 32, "n_features": 64}
    if n_comp == 3:
        return {**networks, "steps": 5000, "batch_size": 1024, "learning_rate": 1e-3}
    return {**networks, "steps": 3000, "batch_size": 512, "learning_rate": 2e-3}


POSITIVE_INTS = (
    "depth",
    "sync_interval",
    "plateau_patience",
    "checkpoint_every",
    "ensemble",
    "lbfgs_from",
    "lbfgs_points",
)
OPTIONAL_POSITIVE_INTS = (
    "width", "mu_width", "mu_depth", "n_features", "max_members_per_chunk", "batch_size",
    "steps",
)  # fmt: skip
POSITIVE_FLOATS = (
    "plateau_factor", "min_lr", "sigma_factor_mu", "noise_floor"
)  # fmt: skip
OPTIONAL_POSITIVE_FLOATS = (
    "sigma_u", "sigma_mu", "mu_ref", "sigma_factor_u", "learning_rate", "sigma_ratio_z"
)  # fmt: skip


def _int_at_least(value, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _positive_int(name: str, value, *, optional: bool) -> None:
    if value is None and optional:
        return
    if not _int_at_least(value, 1):
        none = " or None" if optional else ""
        raise ConfigError(f"config.{name} must be a positive integer{none}; got {value!r}")


def _choice(name: str, value: str, valid: tuple[str, ...]) -> None:
    if value not in valid:
        raise ConfigError(f"config.{name} must be one of {valid}; got {value!r}")


def field_help() -> dict[str, str]:
    """Meaning (and unit) of every Config field, from the class docstring's Attributes
    (one source for ``--help`` and docs/api.md)."""
    text = (Config.__doc__ or "").split("Attributes:", 1)[-1]
    out: dict[str, str] = {}
    names: list[str] = []
    for line in text.splitlines():
        head, sep, rest = line.strip().partition(": ")
        keys = [k.strip() for k in head.split(",")]
        if (
            line.startswith("      ")
            and not line.startswith("        ")
            and sep
            and all(k.isidentifier() for k in keys)
        ):
            names = keys
            for k in names:
                out[k] = rest.strip()
        elif names and line.strip():
            for k in names:
                out[k] += " " + line.strip()
    return {k: v.replace("``", "") for k, v in out.items()}
