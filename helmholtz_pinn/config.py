"""One frozen configuration for an inversion: model, physics and training settings.

Units: ``mu_ref`` in Pa; Fourier scales in cycles per field of view (nondimensional);
``steps``, ``sync_interval`` and ``pde_warmup`` in training steps; ``plateau_patience``
in blocks. The command line maps its options onto these fields (no second list of
defaults).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from helmholtz_pinn.errors import ConfigError

ACTIVATIONS = ("tanh", "sin")
MU_MODELS = ("voigt", "per-frequency", "springpot")
WEIGHTINGS = ("noise", "uniform")
AUX_NETWORKS = ("mu", "u")


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings of one PINN inversion.

    Attributes:
      width: hidden width of the u-network; None: 256 for 2-D data (slicewise fits
        too), 512 for one 3-D fit (one network holds the whole volume; measured on the
        elastic volumes, docs/accuracy.md).
      depth: number of hidden layers of the u-network.
      mu_width, mu_depth: the same for the mu-network (which also carries the navier
        form's pressure); None: 64 x 2 for 2-D data, 128 x 3 for one 3-D fit.
      n_features: Fourier frequencies per network (the embedding has 2 * n_features);
        None: 128 for 2-D data, 256 for one 3-D fit.
      sigma_u, sigma_mu: Fourier scale, cycles per field of view; None derives it from
        the shortest expected wavelength (``sigma_factor_u``/``sigma_factor_mu`` times
        field of view / wavelength).
      sigma_factor_u, sigma_factor_mu: the factors of that automatic Fourier scale;
        sigma_factor_u None: 1.0 for 2-D data (slicewise fits too), 0.5 for one 3-D fit
        (a 2-D-tuned scale biases 3-D fits' G' low; measured on the elastic volumes,
        docs/accuracy_elastic.md) and for 2-D data whose best field's noise fraction is
        at least 0.15 (problem.NOISY_2D; at 1.0 elastic slices at -10 dB collapsed to the
        modulus floor, at 0.5 they gave 11-18 %; docs/accuracy.md).
      sigma_ratio_z: 3-D fits only: the Fourier scale along the third (slice) axis as a
        fraction of the in-plane scale, for both networks (1 is isotropic; tuned on slabs
        10 voxels thick, where through-plane detail is poorly sampled).
      activation: hidden activation, "tanh" or "sin".
      pde: the residual form, a module of :mod:`helmholtz_pinn.pinn.forms`: "helmholtz"
        (mu Lap u + rho omega^2 u = 0), "hetero" (div(mu grad u) + rho omega^2 u = 0),
        "curl" (hetero on q = curl u, three components), "navier" (the elastic
        Navier-Cauchy equation with a free pressure, vector data), or "auto" (navier
        for three-component data, hetero otherwise; :func:`helmholtz_pinn.pinn.forms.resolve`);
        checked when a fit is prepared.
      mu_model: "voigt" (mu = G' + i omega eta, G' and eta shared by all frequencies),
        "springpot" (power law mu = kappa (i omega)^alpha: |mu| grows as omega^alpha and
        the phase angle alpha pi / 2 is shared by all frequencies, 0 < alpha < 1) or
        "per-frequency" (an independent complex modulus per frequency).
      aux_network: which network outputs the form's auxiliary fields (the navier form's
        pressure p): "u" (beside the displacement, at the wave's scale; p varies on the
        shear wavelength near inclusions and free faces while mu is piecewise smooth) or
        "mu" (beside the modulus, at the mu-network's Fourier scale); None: "mu" for 2-D
        data, "u" for one 3-D fit (H200 volumes at -20 dB: G' error 0.6-1.0 points lower
        on all four files, the same clean G' error, G'' error 0-2 points higher;
        docs/accuracy.md).
      weighting: "noise" (each frequency's and component's field weighs 1 / n^2 in
        both loss terms, n its noise RMS over its RMS, estimated from the data by
        :func:`helmholtz_pinn.assess.stencils.noise_rms` and at least ``noise_floor`` times the
        RMS of the frequency's strongest component; a field that is mostly noise, or
        numerically zero, then cannot pull the modulus) or "uniform" (every field
        weighs 1).
      noise_floor: the smallest noise level assumed, as a fraction of the RMS of the
        strongest component at each frequency (model and discretisation error of
        clean data).
      mu_ref: reference modulus, Pa, used to nondimensionalise; None estimates it from
        the data (smoothed algebraic inversion).
      steps: training steps (a multiple of ``sync_interval`` is run).
      sync_interval: steps per on-device ``lax.scan`` block; the loss is read once a block.
      batch_size: voxels drawn per step (data and collocation points); every voxel
        in the mask, each step, when it is at least their number; None: 2048 (one 3-D
        fit at 4096 was as accurate and took twice as long; docs/accuracy.md).
      learning_rate: Adam step size at the start.
      pde_weight: weight of the PDE loss after the warm-up.
      pde_warmup: steps over which the PDE weight ramps linearly from 0.
      pde_margin: voxels of the mask's in-plane rim (grid axes 0 and 1; a voxel counts
        when every voxel within this many steps, diagonals included, is in the mask and
        on the grid) whose PDE residual is left out of the loss; their data term stays
        and their modulus is the mu-network's continuation from inside. None: for a 3-D
        navier fit one sixth of the shortest expected shear wavelength
        sqrt(mu_ref / rho) / f_max in in-plane voxels, rounded, at least 1 (3 voxels on
        the 1 mm FEM volumes), 0 otherwise (H200, elastic FEM tuning volume: G' error
        3.9 -> 2.7 % clean and 4.9 -> 3.9 % at -20 dB; within about 5 voxels of a
        traction-free face the fitted navier residual pulls G' 20-40 % low; no gain on
        2-D slices; docs/accuracy.md).
      plateau_patience, plateau_factor, min_lr: reduce-on-plateau schedule acting
        between blocks: the rate is multiplied by ``plateau_factor`` after
        ``plateau_patience`` blocks without a 1 % improvement, never below ``min_lr``.
      max_retries: divergence roll-backs (rate halved each time) before giving up.
      checkpoint_every: blocks between checkpoints when a checkpoint folder is given.
      max_members_per_chunk: members (datasets or z-slices, times ``ensemble``) trained
        at once; a larger batch runs in chunks of whole datasets, one after the other,
        each checkpointed in its own folder (``checkpoints/chunk-<i>``); None derives it
        from the free device memory (host memory on the CPU) and
        helmholtz_pinn.fit.memory.member_bytes (a per-member estimate).
      ensemble: E independently seeded fits (seeds seed .. seed + E - 1) trained as one
        vmapped program; the result is their mean modulus and its standard deviation.
      ensemble_keep: an ensemble member whose final loss is above ``ensemble_keep`` times
        the lowest member's is left out of the mean and the spread (it ended in a poorer
        optimum) and named in metrics.json (``ensemble_dropped_seeds``) and a warning;
        ``inf`` keeps every member. A slicewise fit decides slice by slice (seeds per
        slice in ``ensemble_dropped_seeds``). The default 2 was
        chosen on the small elastic fixture at CPU settings (seeds 0-7: 1.0-1.8x the lowest
        final loss at 11-13 % error, 3.3-3.4x at 37-38 %) and checked at full size (H200,
        the cropped tuning volume: a poor seed at 8.5 % error ended at 31x, three good ones
        within 1.07x; the whole volume: seeds 0-3 within 1.48x; docs/accuracy.md).
      metric_margin: voxels of the mask's rim left out of the accuracy metrics and the
        clinical medians of metrics.json (a voxel is scored when every voxel within this
        many steps, diagonals included, is in the mask and on the grid; holes in the mask
        count as outside; in-plane only for slicewise fits); 0 scores the whole mask. It
        does not change the fit.
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
    sigma_ratio_z: float = 0.25
    activation: Literal["tanh", "sin"] = "tanh"
    pde: str = "auto"
    mu_model: Literal["voigt", "per-frequency", "springpot"] = "voigt"
    aux_network: Literal["mu", "u"] | None = None
    weighting: Literal["noise", "uniform"] = "noise"
    noise_floor: float = 0.03
    mu_ref: float | None = None
    steps: int = 10000
    sync_interval: int = 100
    batch_size: int | None = None
    learning_rate: float = 1e-3
    pde_weight: float = 0.1
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
        _choice("mu_model", self.mu_model, MU_MODELS)
        _choice("weighting", self.weighting, WEIGHTINGS)
        _choice("aux_network", self.aux_network, (*AUX_NETWORKS, None))
        for name in (
            "depth",
            "steps",
            "sync_interval",
            "plateau_patience",
            "checkpoint_every",
            "ensemble",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"config.{name} must be a positive integer; got {value!r}")
        for name in (
            "learning_rate",
            "plateau_factor",
            "min_lr",
            "sigma_factor_mu",
            "sigma_ratio_z",
            "noise_floor",
        ):
            if not getattr(self, name) > 0:
                raise ConfigError(f"config.{name} must be > 0; got {getattr(self, name)!r}")
        for name in (
            "width",
            "mu_width",
            "mu_depth",
            "n_features",
            "max_members_per_chunk",
            "batch_size",
        ):
            value = getattr(self, name)
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value < 1
            ):
                raise ConfigError(
                    f"config.{name} must be a positive integer or None; got {value!r}"
                )
        for name in ("sigma_u", "sigma_mu", "mu_ref", "sigma_factor_u"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ConfigError(f"config.{name} must be > 0 or None; got {value!r}")
        if not self.ensemble_keep >= 1:
            raise ConfigError(
                f"config.ensemble_keep must be >= 1 (a factor on the lowest final loss) or "
                f"inf; got {self.ensemble_keep!r}"
            )
        if not isinstance(self.metric_margin, int) or self.metric_margin < 0:
            raise ConfigError(
                f"config.metric_margin must be an integer >= 0 voxels; got {self.metric_margin!r}"
            )
        margin = self.pde_margin
        if margin is not None and (
            not isinstance(margin, int) or isinstance(margin, bool) or margin < 0
        ):
            raise ConfigError(
                f"config.pde_margin must be an integer >= 0 voxels or None; got {margin!r}"
            )
        if self.pde_weight < 0 or self.pde_warmup < 0 or self.max_retries < 0:
            raise ConfigError("config.pde_weight, pde_warmup and max_retries must be >= 0")

    def replace(self, **overrides) -> Config:
        """A copy with ``overrides`` applied; unknown names raise a ConfigError naming them."""
        unknown = set(overrides) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            valid = ", ".join(f.name for f in dataclasses.fields(self))
            raise ConfigError(f"unknown config option(s) {sorted(unknown)}; valid: {valid}")
        return dataclasses.replace(self, **overrides)


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
