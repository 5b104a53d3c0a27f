"""Joint inversion over several frequencies, and the AHI baseline's command line.

The phantom is the homogeneous Voigt medium G' = 3 kPa, eta = 1 Pa s (mu = G' + i omega eta)
at 60 and 90 Hz, 40 x 40 voxels of 1 mm, two drive directions. Its wave field comes from
the second-order finite-difference solver (grid refined twice, about 38 nodes per
wavelength at 90 Hz), whose dispersion error shifts the apparent modulus by
(kh)^2 / 12 ~ 0.2 %; per-frequency AHI on the same field gives median G' 3009 and 3020 Pa
and eta 1.000 Pa s, so the data support the true values to < 1 %, and the PINN's errors
(G' 0.5-1 % low) are its own. The tolerances below are several times the errors observed
with these settings (see each test).
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
from settings import WAVES_FIT, springpot_waves, voigt_waves

from helmholtz_pinn.assess.fit_checks import FitQualityWarning
from helmholtz_pinn.errors import ConfigError
from helmholtz_pinn.fit import inversion
from helmholtz_pinn.forward import phantoms
from helmholtz_pinn.forward.phantoms import simulate_phantom
from helmholtz_pinn.laws import per_frequency, springpot, voigt
from helmholtz_pinn.pinn import forms

ROOT = Path(__file__).resolve().parents[2]
STORAGE = 3e3  # Pa: the homogeneous phantom's default G'
ETA = 1.0  # Pa s: its default viscosity
FREQS = (60.0, 90.0)
GRID = (40, 40)
# Small networks and the fewest steps that pass with margin (1000 steps: 3.5 % median
# error). CPU, 2 busy cores: 22-28 s per fit.
FIT = dict(WAVES_FIT)


@pytest.fixture(scope="module")
def phantom():
    return simulate_phantom("homogeneous", shape=GRID, frequencies=FREQS, components=2)


def viscosity(mu: np.ndarray) -> np.ndarray:
    """eta = Im(mu_f) / (2 pi f), Pa s, for mu (F, *grid) in Pa."""
    omega = 2 * np.pi * np.asarray(FREQS).reshape(-1, *([1] * len(GRID)))
    return mu.imag / omega


def test_voigt_model_ties_frequencies_by_construction(rng):
    """Any network output: G' is one map and Im(mu_f) / omega_f one viscosity map."""
    omega_ratio = jnp.asarray(np.asarray(FREQS) / max(FREQS), jnp.float32)
    value = jnp.asarray(rng.normal(size=(64, 2)), jnp.float32)
    mu, _ = voigt.network(value, None, omega_ratio)
    mu = np.asarray(mu)
    assert mu.shape == (64, 2)
    np.testing.assert_array_equal(mu.real[:, 0], mu.real[:, 1])
    eta = mu.imag / np.asarray(omega_ratio)
    np.testing.assert_allclose(eta[:, 0], eta[:, 1], rtol=1e-6, atol=1e-7)
    # the per-frequency model has independent channels: nothing ties them
    mu_pf, _ = per_frequency.network(
        jnp.asarray(rng.normal(size=(64, 4)), jnp.float32), None, omega_ratio
    )
    assert np.max(np.abs(np.asarray(mu_pf)[:, 0] - np.asarray(mu_pf)[:, 1])) > 0.1


def test_joint_voigt_fit_recovers_storage_and_viscosity(phantom):
    """Observed with FIT (seeds 0-4, pde="helmholtz"): median G' 2970-2985 Pa (<= 1.0 %
    off), median error of G' 0.8-2.0 %, median eta 0.974-0.998 Pa s (<= 2.6 % off); the
    two frequencies' eta maps agree to ~1.5e-7 of their maximum (float32 rounding). At
    1000 steps the median error reached 3.5 %. Tolerances: G' 3 %, its median error 3 %,
    eta 10 %, tie 1e-5.

    The law is the default's choice: both laws are fitted; the springpot left a spread of
    2.0 % between the frequencies' factors, Voigt 0.1 %, so Voigt is kept."""
    res = inversion.invert(phantom, progress=False, pde="helmholtz", **FIT)
    law = res.metrics["law"]
    assert law["mu_model"] == "voigt" and list(law["tried"]) == ["springpot", "voigt"]
    assert law["tried"]["voigt"] < law["tried"]["springpot"] / 3
    assert res.mu.shape == (len(FREQS), *GRID) and np.iscomplexobj(res.mu)
    assert np.all(np.isfinite(res.mu))
    eta = viscosity(res.mu)
    # one storage map and one viscosity map for both frequencies, exactly (float32)
    np.testing.assert_array_equal(res.mu.real[0], res.mu.real[1])
    np.testing.assert_allclose(eta[0], eta[1], rtol=0, atol=1e-5 * np.max(np.abs(eta)))
    assert np.median(eta) == pytest.approx(ETA, rel=0.10)
    model = res.metrics["clinical"]["model"]  # eta as metrics.json reports it (Pa s)
    assert model["name"] == "voigt" and model["mask"]["viscosity"] == pytest.approx(
        np.median(eta[1]), rel=1e-6
    )
    # the foundation issue's criterion: the homogeneous phantom's storage modulus within
    # 3 % (median) in a short CPU fit (observed 1.0 % at most over seeds 0-4)
    assert np.median(res.mu.real) == pytest.approx(STORAGE, rel=0.03)
    assert res.metrics["median_rel_error_storage"] < 0.03


def test_per_frequency_fit_gives_one_map_per_frequency(phantom):
    """FIT with 256 voxels a step instead of 512. Observed (seeds 0, 3, 4;
    pde="hetero"): median G' 2968-2996 Pa at 60 Hz and 2971-2992 Pa at 90 Hz (<= 1.1 %
    off), median error of G' 1.2-3.1 % at 60 Hz and 1.0-1.6 % at 90 Hz, median
    Im(mu_f) / omega_f 0.98-1.01 Pa s (at 512 voxels: G' <= 0.8 % off, errors 0.9-1.6 %,
    eta 0.986-1.003 Pa s; at 512 voxels and 1000 steps the error reached 5.6 %).
    Tolerances: G' 4 %, its median error 5 %, eta 15 % (nothing ties the 60 Hz loss
    modulus, ~380 Pa, to 90 Hz)."""
    fit = dict(FIT, batch_size=256)
    res = inversion.invert(phantom, progress=False, pde="hetero", mu_model="per-frequency", **fit)
    assert res.mu.shape == (len(FREQS), *GRID) and np.iscomplexobj(res.mu)
    per_freq = res.metrics["per_frequency"]
    assert [p["frequency_hz"] for p in per_freq] == list(FREQS)
    eta = viscosity(res.mu)
    for i, f in enumerate(FREQS):
        assert np.median(res.mu[i].real) == pytest.approx(STORAGE, rel=0.04), f
        assert per_freq[i]["median_rel_error_storage"] < 0.05, f
        assert np.median(eta[i]) == pytest.approx(ETA, rel=0.15), f
    # independent maps: nothing ties the frequencies (unlike the Voigt model)
    assert np.max(np.abs(res.mu[0] - res.mu[1])) > 1.0  # Pa


def _cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "JAX_PLATFORMS": "cpu",
        "MPLBACKEND": "Agg",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "helmholtz_pinn.cli", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "homogeneous.npz"
    _cli("simulate", "--phantom", "homogeneous", "--out", path, cwd=path.parent)
    return path


@pytest.mark.parametrize(
    "smoothing", [[], ["--smoothing", "gaussian", "--sigma", "2"]], ids=["plain", "gaussian"]
)
def test_baseline_cli_writes_modulus_and_metrics(simulated, tmp_path, smoothing):
    """Plain AHI on the clean 64 x 64 homogeneous phantom: median error ~0.7 %."""
    out = tmp_path / "ahi"
    _cli("baseline", simulated, "--method", "ahi", *smoothing, "--out", out, cwd=tmp_path)
    data = np.load(simulated)
    grid = data["u"].shape[2:]
    with np.load(out / "mu.npz") as saved:
        mu = saved["mu"]
    assert np.iscomplexobj(mu)
    assert mu.shape in (grid, (data["u"].shape[0], *grid))
    finite = np.isfinite(mu)
    assert finite.mean() > 0.99
    assert np.median(mu.real[finite]) == pytest.approx(STORAGE, rel=0.05)  # Pa, not kPa
    facts = json.loads((out / "metrics.json").read_text())
    err = facts["median_rel_error_storage"]
    assert isinstance(err, float) and math.isfinite(err) and 0 <= err < 0.05


def test_springpot_model_is_a_power_law_and_its_gradient_is_exact(rng):
    """Any network output: arg mu' is alpha pi / 2 at every frequency (0 < alpha < 1, so
    G'' > 0), |mu'| scales as omega^alpha; the propagated gradient equals the chain rule
    by jax.jvp in float64."""
    import jax

    omega_ratio = np.asarray(FREQS) / max(FREQS)
    value = rng.normal(size=(32, 2))
    mu, _ = springpot.network(jnp.asarray(value, jnp.float32), None, omega_ratio)
    mu = np.asarray(mu)
    alpha = np.angle(mu) * 2 / np.pi
    assert np.all((alpha > 0) & (alpha < 1)) and np.all(mu.imag > 0)
    np.testing.assert_allclose(alpha[:, 0], alpha[:, 1], atol=1e-6)
    ratio = np.abs(mu[:, 0]) / np.abs(mu[:, 1])
    np.testing.assert_allclose(ratio, omega_ratio[0] ** alpha[:, 0], rtol=1e-5)
    assert springpot.network(jnp.zeros((1, 2)), None, jnp.ones(1))[0][0, 0] == pytest.approx(
        np.exp(1j * springpot.ALPHA_START * np.pi / 2), rel=1e-6
    )
    with jax.enable_x64(True):
        o = jnp.asarray(value, jnp.float64)
        do = jnp.asarray(rng.normal(size=(3, 32, 2)), jnp.float64)  # d o / d x, d = 3
        w = jnp.asarray(omega_ratio, jnp.float64)
        _, grad = springpot.network(o, do, w)

        def mu_of(o):
            return springpot.network(o, None, w)[0]

        expected = jnp.stack([jax.jvp(mu_of, (o,), (do[i],))[1] for i in range(3)])
        np.testing.assert_allclose(np.asarray(grad), np.asarray(expected), rtol=1e-12)


def test_springpot_fit_recovers_the_exponent_and_the_modulus():
    """Exact springpot plane waves (alpha 0.3, |G*| 3 kPa at 90 Hz, 24 x 24 voxels of
    1 mm), FIT at 1000 steps. Observed (seeds 0-2): median alpha 0.298-0.300, median |G*|
    at 90 Hz 2947-2968 Pa (<= 1.8 % low), median error of G' 1.7-3.2 % (at 2000 steps
    2973-2988 Pa and 0.9-2.4 %). Tolerances: alpha 0.03, |G*| 3 %, G' error 5 %.

    The right law is quiet: its per-frequency factors spread by 0.10-0.21 % (observed),
    far below the 2 % limit; a Voigt fit of the same data leaves 3.6 % (the next test)."""
    data = springpot_waves()
    fit = dict(FIT, steps=1000)
    res = inversion.invert(data, progress=False, pde="helmholtz", mu_model="springpot", **fit)
    check = next(c for c in res.metrics["fit_quality"] if c["name"] == "law_consistency")
    assert check["passed"] and check["value"] < forms.get("helmholtz").spread_max / 4
    alpha = np.angle(res.mu) * 2 / np.pi
    np.testing.assert_allclose(alpha[0], alpha[1], atol=1e-5)  # one exponent for all f
    assert np.median(alpha) == pytest.approx(0.3, abs=0.03)
    assert np.median(np.abs(res.mu[1])) == pytest.approx(3000.0, rel=0.03)
    assert res.metrics["median_rel_error_storage"] < 0.05
    model = res.metrics["clinical"]["model"]  # the exponent as metrics.json reports it
    assert model["name"] == "springpot" and model["units"] == {"alpha": "1"}
    assert model["mask"]["alpha"] == pytest.approx(np.median(alpha), abs=1e-6)


def test_a_wrong_law_is_flagged():
    """Voigt on power-law waves, FIT at 1000 steps: the per-frequency factors spread by
    3.5-3.6 % (observed, seeds 0-2; 3.6 % at 2000 steps), above the 2 % limit of the
    helmholtz form, so law_consistency fails and warns."""
    fit = dict(FIT, steps=1000)
    with pytest.warns(FitQualityWarning, match="law_consistency"):
        res = inversion.invert(
            springpot_waves(), progress=False, pde="helmholtz", mu_model="voigt", **fit
        )
    check = next(c for c in res.metrics["fit_quality"] if c["name"] == "law_consistency")
    assert not check["passed"] and check["value"] > 1.5 * forms.get("helmholtz").spread_max


def test_springpot_dashpot_names_the_law_of_the_tissue():
    """One law holding both (mu = k (i omega)^alpha + i omega eta), fitted to exact plane
    waves of each. Observed with FIT (seed 0): Voigt tissue (3 kPa, 2 Pa s) alpha 0.013,
    eta 1.90 Pa s, G' 1.5 % (a Voigt fit: 1.5 %); springpot tissue (alpha 0.3) alpha
    0.287, eta 0.086 Pa s (the dashpot 4 % of G'' at 90 Hz), G' 2.0 %. Tolerances: alpha
    0.05 of the truth, eta within 10 % of 2 Pa s or below 10 % of the springpot's G''
    at 90 Hz, G' 5 %."""
    voigt = inversion.invert(
        voigt_waves(), progress=False, pde="helmholtz", mu_model="springpot-dashpot", **FIT
    )
    power = inversion.invert(
        springpot_waves(), progress=False, pde="helmholtz", mu_model="springpot-dashpot", **FIT
    )
    for res, alpha in ((voigt, 0.0), (power, 0.3)):
        model = res.metrics["clinical"]["model"]
        assert model["name"] == "springpot-dashpot"
        assert model["units"] == {"alpha": "1", "viscosity": "Pa s"}
        assert model["mask"]["alpha"] == pytest.approx(alpha, abs=0.05)
        assert res.metrics["median_rel_error_storage"] < 0.05
    assert voigt.metrics["clinical"]["model"]["mask"]["viscosity"] == pytest.approx(2.0, rel=0.1)
    loss_90 = 3000.0 * np.sin(0.3 * np.pi / 2)  # Pa
    dashpot_90 = 2 * np.pi * 90.0 * power.metrics["clinical"]["model"]["mask"]["viscosity"]
    assert 0 <= dashpot_90 < 0.1 * loss_90


def test_springpot_dashpot_needs_two_frequencies():
    data = springpot_waves(freqs=(60.0,))
    with pytest.raises(ConfigError, match="2 or more frequencies"):
        inversion.invert(data, progress=False, mu_model="springpot-dashpot", **FIT)


def test_the_springpot_exponent_varies_in_space():
    """Two regions of power-law tissue with the same G' at 60 Hz, alpha 0.15 and 0.35
    (32 x 32 voxels of 1 mm, 60/90 Hz, the finite-difference simulator), FIT at 1500
    steps. Observed (seeds 0-2): median alpha 0.147-0.151 and 0.353-0.365 (at 2000 steps,
    seed 0: 0.148 and 0.356; at 1000 steps 0.372-0.375 in the second region, too close
    to the bound). Tolerance: 0.03 per region."""
    phantom = phantoms.make_phantom("homogeneous", shape=(32, 32))
    alpha = np.where(np.arange(32)[:, None] < 16, 0.15, 0.35) * np.ones((1, 32))
    data = phantoms.simulate(phantoms.as_springpot(phantom, alpha, 60.0), (60.0, 90.0), 2)
    fit = dict(FIT, steps=1500)
    res = inversion.invert(data, progress=False, pde="hetero", mu_model="springpot", **fit)
    fitted = np.angle(res.mu[0]) * 2 / np.pi
    assert np.median(fitted[:16]) == pytest.approx(0.15, abs=0.03)
    assert np.median(fitted[16:]) == pytest.approx(0.35, abs=0.03)
    assert np.median(fitted[16:]) - np.median(fitted[:16]) > 0.15  # told apart
