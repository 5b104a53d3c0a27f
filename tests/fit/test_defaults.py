"""The data-derived defaults: pure rules on constructed facts. In the tuned region (14-17
voxels per shortest wavelength, grids of 80-100 voxels, three components, at most
moderate noise) each returns today's value; outside it, only the documented proposals
move, and they say they are proposals."""

import numpy as np
import pytest

from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import InputError
from helmholtz_pinn.fit import defaults
from helmholtz_pinn.fit import plan as run_plan
from helmholtz_pinn.forward.phantoms import add_noise
from helmholtz_pinn.io.dataset import Dataset


def facts(**kw):
    """The elastic four-target slab volume: 80 x 100 x 10 voxels of 1 mm, 17.6 voxels per
    wavelength at 100 Hz, three components, clean."""
    base = dict(
        voxels_per_wavelength=17.6, wavelength_m=17.6e-3, field_of_view_m=99e-3,
        grid=(80, 100, 10), mask_voxels=80_000, noise=0.003, n_comp=3, ndim=3, n_freq=3,
        through_plane=0.03,
    )  # fmt: skip
    return defaults.DataFacts(**{**base, **kw})


TUNED = [
    facts(),  # the slab volume, clean
    facts(noise=0.07),  # at -20 dB
    facts(grid=(80, 100), ndim=2, mask_voxels=8000, voxels_per_wavelength=14.0),  # a slice
    facts(grid=(32, 32, 16), mask_voxels=9000, voxels_per_wavelength=15.8),  # the reference
]


@pytest.mark.parametrize("f", TUNED)
def test_the_tuned_region_gets_todays_values(f):
    rules = defaults.settings(f, "navier")
    assert all(r.backed for r in rules.values()), {k: r.rule for k, r in rules.items()}
    today = defaults.SIGMA_FACTOR_U_3D if f.ndim == 3 else defaults.SIGMA_FACTOR_U_2D
    assert rules["sigma_factor_u"].value == today
    sizes = rules["network"].value
    assert sizes == dict(
        width=run_plan.WIDTH[f.ndim], n_features=run_plan.N_FEATURES[f.ndim],
        mu_width=run_plan.MU_WIDTH[f.ndim], mu_depth=run_plan.MU_DEPTH[f.ndim],
    )  # fmt: skip
    assert rules["batch_size"].value == 2048
    assert rules["steps"].value == defaults.STEPS == 10_000
    assert rules["learning_rate"].value == defaults.LEARNING_RATE == 1e-3
    assert rules["pde_weight"].value == defaults.PDE_WEIGHT == 0.1
    assert Config.pde_weight is None  # the plan applies the rule
    margin = 3 if f.ndim == 3 and f.voxels_per_wavelength < 18 else 0
    assert rules["pde_margin"].value == margin  # 1 mm slabs at 100 Hz: 3 voxels
    assert rules["sigma_ratio_z"].value == 0.25


@pytest.mark.parametrize(
    ("share", "ratio"),
    [(0.0, 0.25), (0.03, 0.25), (0.2, 0.5**0.5), (0.25, (2 / 3) ** 0.5), (1 / 3, 1.0),
     (0.65, 1.0), (1.0, 1.0), (float("nan"), 0.25)],
)  # fmt: skip
def test_the_slice_axis_scale_is_the_waves_own_wavenumber_ratio(share, ratio):
    """sqrt(2 s / (1 - s)): a wave with |k_z|^2 = s |k|^2 and the rest shared by the two
    in-plane axes has k_z / k_x = that; held within 0.25-1; backed at the CPU size (64
    wide), a proposal for wider networks unless 0.25; no estimate or noisy data: 0.25."""
    small = defaults.sigma_ratio_z(share, 0.003, 64)
    assert small.value == pytest.approx(ratio) and small.backed
    assert f"{ratio:.3g}" in small.rule
    wide = defaults.sigma_ratio_z(share, 0.003, 512)
    assert wide.value == pytest.approx(ratio) and wide.backed == (ratio == 0.25)
    noisy = defaults.sigma_ratio_z(share, defaults.CLEAN_NOISE, 64)  # noisy: the lower bound
    assert noisy.value == 0.25 and noisy.backed


def wave(direction, grid=(24, 24, 10), noise_db=None):
    """A plane wave of 10 mm on 1 mm voxels along ``direction``, one frequency."""
    d = np.asarray(direction, float) / np.linalg.norm(direction)
    x = np.meshgrid(*[np.arange(n) * 1e-3 for n in grid], indexing="ij")
    phase = 2 * np.pi / 10e-3 * sum(di * xi for di, xi in zip(d, x, strict=True))
    u = np.exp(1j * phase)[None, None].astype(np.complex64)
    if noise_db is not None:
        u = add_noise(u, noise_db, 0)
    return Dataset(u=u, frequency=np.array([60.0]), spacing=np.full(len(grid), 1e-3))


def test_the_slice_axis_rule_reads_the_waves_direction_from_u():
    """A plane wave at 45 degrees out of the slice plane (share 1/2) gives the isotropic 1
    at the CPU size, a proposal at the default sizes (the rules arm carries it); one in
    the plane keeps 0.25."""
    out = defaults.settings(defaults.facts_of(wave((1, 0, 1))), "hetero")
    assert out["sigma_ratio_z"].value == 1.0 and not out["sigma_ratio_z"].backed
    assert defaults.overrides(out)["sigma_ratio_z"] == 1.0
    flat = defaults.settings(defaults.facts_of(wave((1, 0.3, 0))), "hetero")
    assert flat["sigma_ratio_z"].value == 0.25 and flat["sigma_ratio_z"].backed


def test_the_plan_applies_the_slice_axis_rule_where_backed():
    """The plan: the data's ratio for 64-wide u-networks on clean data, 0.25 for the
    default 512 (the data's value named as a proposal) and for noisy data; a given ratio
    is kept; a 2-D field has no slice axis."""
    through = wave((1, 0, 1))
    assert run_plan.z_ratio([through], Config(), 64)[0] == 1.0
    value, rule = run_plan.z_ratio([through], Config(), 512)
    assert value == 0.25 and "proposed" in rule
    assert run_plan.z_ratio([wave((1, 0, 1), noise_db=-20)], Config(), 64)[0] == 0.25
    assert run_plan.z_ratio([through], Config(sigma_ratio_z=0.4), 64) == (0.4, "configured")
    assert run_plan.z_ratio([wave((1, 0.3), (24, 24))], Config(), 64)[1] == "unused: 2-D data"


def test_the_fourier_scale_is_the_factor_over_the_wavelength_from_u():
    f = facts(field_of_view_m=0.1, wavelength_m=0.02)
    sigma_u, sigma_mu = defaults.fourier_scales(f, 0.5, 0.5).value
    assert sigma_u == pytest.approx(2.5) and sigma_mu == pytest.approx(2.5)


def test_noisy_2d_data_get_the_smaller_factor_as_today():
    clean = defaults.sigma_factor_u(facts(ndim=2, grid=(80, 100), noise=0.05))
    noisy = defaults.sigma_factor_u(facts(ndim=2, grid=(80, 100), noise=0.2))
    assert (clean.value, noisy.value) == (1.0, 0.5) and clean.backed and noisy.backed
    assert "0.2 >= 0.15" in noisy.rule


def test_coarse_2d_data_get_the_3d_factor():
    """2-D data below 14 voxels per wavelength, clean or mildly noisy, get 0.5 (the
    bundled 30 x 36 example at 9.2 voxels); at 14 and above, and where the noisy rules
    take over, they do not."""
    example = facts(grid=(30, 36), ndim=2, mask_voxels=1080, voxels_per_wavelength=9.2)
    coarse = defaults.sigma_factor_u(example)
    assert coarse.value == defaults.SIGMA_FACTOR_U_3D == 0.5 and coarse.backed
    assert "9.2 voxels per wavelength (< 14)" in coarse.rule
    assert defaults.sigma_factor_u(example._replace(voxels_per_wavelength=14.0)).value == 1.0
    assert defaults.sigma_factor_u(example._replace(noise=0.2)).value == 0.1  # a slice
    noisy = example._replace(noise=0.2, grid=(80, 100), mask_voxels=8000, n_comp=2)
    assert defaults.sigma_factor_u(noisy._replace(voxels_per_wavelength=17.0)).value == 0.5
    one = example._replace(n_comp=1, noise=0.05)  # noisy below the tuned sampling
    assert defaults.sigma_factor_u(one).value == defaults.NOISY_FACTOR_U


def test_noisy_three_component_slices_in_the_small_fit_get_a_smooth_u_network():
    """A 32 x 32 slice of three components at -10 dB (noise fraction 0.2) in the small fit
    by its size: factor 0.1; at -20 dB (0.07) the 2-D factor 1.0; the same noise on a
    2-D field too large for the small fit, or of one component there: 0.5."""
    slice_ = facts(voxels_per_wavelength=17.0, grid=(32, 32), mask_voxels=800, noise=0.2)
    slice_ = slice_._replace(ndim=2, through_plane=float("nan"))
    factor = defaults.sigma_factor_u(slice_)
    assert factor.value == defaults.NOISY_FACTOR_U and factor.backed
    assert "three-component 2-D field in the small fit" in factor.rule
    assert defaults.sigma_factor_u(slice_._replace(noise=0.07)).value == 1.0
    large = slice_._replace(grid=(80, 100), mask_voxels=8000)
    assert defaults.sigma_factor_u(large).value == 0.5
    assert defaults.sigma_factor_u(large._replace(n_comp=1)).value == 0.5


def test_noisy_data_below_the_tuned_sampling_get_a_smooth_u_network():
    """One component of a liver-like volume at -20 dB (8 voxels per wavelength, noise
    0.07): factor 0.1, 0.05 at -10 dB (noise 0.3), backed; three components 0.1 below 9
    voxels only; clean, or noisy at 14 voxels (the tuned region's lowest sampling):
    today's factors; the PDE weight stays a proposal."""
    liver = facts(
        voxels_per_wavelength=8.0, grid=(32, 32, 12), mask_voxels=7000, noise=0.07, n_comp=1
    )
    factor = defaults.sigma_factor_u(liver)
    assert factor.value == defaults.NOISY_FACTOR_U == 0.1 and factor.backed
    assert "noise fraction 0.07" in factor.rule and "8 voxels per wavelength" in factor.rule
    louder = defaults.sigma_factor_u(liver._replace(noise=0.3))
    assert louder.value == defaults.NOISIER_FACTOR_U == 0.05
    plane = facts(
        voxels_per_wavelength=6.0, grid=(24, 24), ndim=2, mask_voxels=576, noise=0.1, n_comp=1
    )
    assert defaults.sigma_factor_u(plane).value == 0.1
    clean = liver._replace(noise=0.004)
    assert defaults.sigma_factor_u(clean) == (0.5, "0.5: 3-D data", True)
    assert defaults.sigma_factor_u(liver._replace(voxels_per_wavelength=14.0)).value == 0.5
    organ = liver._replace(n_comp=3)
    assert defaults.sigma_factor_u(organ).value == 0.1
    assert defaults.sigma_factor_u(organ._replace(noise=0.3)).value == 0.1  # not 0.05
    assert defaults.sigma_factor_u(organ._replace(voxels_per_wavelength=10.0)).value == 0.5
    assert defaults.sigma_factor_u(plane._replace(voxels_per_wavelength=14.0)).value == 1.0
    weight = defaults.pde_weight(liver)
    assert weight.value == defaults.NOISY_PDE_WEIGHT and not weight.backed
    assert defaults.pde_weight(clean).value == 0.1


def test_noisy_three_component_volumes_get_the_stronger_pde_weight():
    """Three-component volumes: 0.3, backed, where coarse sampling meets noise (below 10
    voxels per wavelength, noise fraction >= 0.02) or the noise fraction is >= 0.15;
    0.1 at -20 dB above 10 voxels and on clean data; a 2-D slice of three components
    and one or two components where coarse meets noise: the proposal only."""
    organ = facts(
        voxels_per_wavelength=7.4, grid=(20, 20, 8), mask_voxels=1500, noise=0.09, n_comp=3
    )
    coarse = defaults.pde_weight(organ)
    assert coarse.value == defaults.NOISY_PDE_WEIGHT == 0.3 and coarse.backed
    assert "coarse sampling (7.4 voxels" in coarse.rule
    finer = organ._replace(voxels_per_wavelength=15.0)
    assert defaults.pde_weight(finer) == (0.1, "0.1: the tuned region's", True)
    louder = defaults.pde_weight(finer._replace(noise=0.24))
    assert louder.value == 0.3 and louder.backed and "noise fraction 0.24 (>= 0.15)" in louder.rule
    assert defaults.pde_weight(finer._replace(noise=0.149)).value == 0.1
    assert defaults.pde_weight(organ._replace(noise=0.004)).value == 0.1
    slice_2d = organ._replace(ndim=2, grid=(20, 20), through_plane=float("nan"))
    assert not defaults.pde_weight(slice_2d).backed
    assert not defaults.pde_weight(organ._replace(n_comp=2)).backed
    assert defaults.pde_weight(finer._replace(noise=0.24, n_comp=1)).value == 0.1


@pytest.mark.parametrize("n_comp", [1, 2, 3])
def test_noise_at_coarse_sampling_gets_the_small_fit(n_comp):
    """Noisy data below 14 voxels per wavelength, of any number of components: the
    networks, batch, steps and rate of cpu_settings, backed; the same data clean, or
    noisy at 14 voxels: the tables by dimension and 10 000 steps at 1e-3."""
    from helmholtz_pinn.config import cpu_settings

    noisy = facts(voxels_per_wavelength=10.0, grid=(24, 24, 10), mask_voxels=1400, noise=0.08)
    noisy = noisy._replace(n_comp=n_comp)
    small = defaults.fit_size(noisy)
    assert small.value == cpu_settings(n_comp) and small.backed and "small fit" in small.rule
    rules = defaults.settings(noisy, "navier")
    assert rules["network"].value["width"] == 64 and rules["network"].value["mu_depth"] == 3
    assert rules["steps"].value == small.value["steps"] == (5000 if n_comp == 3 else 3000)
    assert rules["batch_size"].value == small.value["batch_size"]
    assert rules["learning_rate"].value == small.value["learning_rate"]
    for region in (noisy._replace(noise=0.004), noisy._replace(voxels_per_wavelength=14.0)):
        assert defaults.fit_size(region).value == {}
        assert defaults.steps(region).value == 10_000
        assert defaults.network_size(region).value["width"] == 512


def test_a_small_noisy_2d_field_gets_the_small_fit_at_any_sampling():
    """A 32 x 32 slice of three components at 17 voxels per wavelength by u (a slice of
    3-D motion reads long) and a noise fraction of 0.07: the small fit, by the field's
    size; the same slice clean, or a noisy 2-D field of 2000 voxels or more, or a noisy
    volume of as few voxels: the sizes by dimension."""
    from helmholtz_pinn.config import cpu_settings

    slice_ = facts(voxels_per_wavelength=17.0, grid=(32, 32), mask_voxels=800, noise=0.07)
    slice_ = slice_._replace(ndim=2, through_plane=float("nan"))
    small = defaults.fit_size(slice_)
    assert small.value == cpu_settings(3) and small.backed and "800 voxels" in small.rule
    assert defaults.network_size(slice_).value["width"] == 64
    assert defaults.steps(slice_).value == 5000
    others = (
        slice_._replace(noise=0.004),
        slice_._replace(mask_voxels=defaults.SMALL_2D, grid=(40, 50)),
        slice_._replace(ndim=3, grid=(16, 16, 4), mask_voxels=800),
    )
    for region in others:
        assert defaults.fit_size(region).value == {}


def test_the_plan_decides_only_the_fields_left_unset():
    """The schedule the plan fills: the small fit's for a noisy field at 6 voxels per
    wavelength (recorded as decided), today's for the clean one; a setting given is
    kept, and the request's None stays visible as steps_asked None."""
    from helmholtz_pinn.forward.phantoms import add_noise
    from helmholtz_pinn.pinn import forms

    x, _ = np.meshgrid(np.arange(24) * 3e-3, np.arange(24) * 3e-3, indexing="ij")
    u = np.exp(1j * 2 * np.pi * x / 18e-3)[None, None].astype(np.complex64)
    clean = Dataset(u=u, frequency=[60.0], spacing=[3e-3] * 2)
    noisy = Dataset(u=add_noise(u, -20.0, 0), frequency=[60.0], spacing=[3e-3] * 2)
    form = forms.get("hetero")
    small = run_plan.plan([noisy], Config(), form=form, devices=1)
    assert (small.spec.width, small.spec.n_features, small.spec.mu_width) == (64, 64, 32)
    assert (small.steps, small.config.learning_rate, small.spec.batch_size) == (3000, 2e-3, 512)
    assert small.record["steps_asked"] is None and small.record["decided"]["steps"] == 3000
    assert "small fit" in small.record["fit_size_rule"] and small.record["small_fit"]
    mine = run_plan.plan([noisy], Config(steps=700, width=48), form=form, devices=1)
    assert (mine.steps, mine.spec.width, mine.spec.mu_width) == (700, 48, 32)
    assert "steps" not in mine.decided and "width" not in mine.decided
    today = run_plan.plan([clean], Config(), form=form, devices=1)
    assert (today.steps, today.config.learning_rate, today.spec.width) == (10_000, 1e-3, 256)
    assert today.decided == ("steps", "learning_rate", "pde_weight") and not today.small_fit
    assert today.spec.pde_weight == today.record["pde_weight"] == 0.1
    assert mine.small_fit  # the rule applied, whichever fields it filled


def test_the_plan_raises_the_pde_weight_of_a_noisy_three_component_volume():
    """A shear plane wave in a three-component volume at 12 voxels per wavelength: at a
    noise fraction near 0.3 (-10 dB) the plan's PDE weight is 0.3 and its record says
    why; the same volume clean stays at 0.1; a weight given is kept as configured."""
    from helmholtz_pinn.forward.phantoms import add_noise
    from helmholtz_pinn.pinn import forms

    x = np.meshgrid(*(np.arange(n) * 3e-3 for n in (20, 20, 4)), indexing="ij")[0]
    wave = np.exp(1j * 2 * np.pi * x / 36e-3)
    u = np.stack([0 * wave, wave, 0.5 * wave])[None].astype(np.complex64)
    form = forms.get("navier")
    noisy = Dataset(u=add_noise(u, -10.0, 0), frequency=[60.0], spacing=[3e-3] * 3)
    loud = run_plan.plan([noisy], Config(), form=form, devices=1)
    assert loud.spec.pde_weight == loud.config.pde_weight == loud.record["pde_weight"] == 0.3
    assert "three-component volume, noise fraction" in loud.record["pde_weight_rule"]
    assert loud.record["decided"]["pde_weight"] == 0.3
    clean = Dataset(u=u, frequency=[60.0], spacing=[3e-3] * 3)
    quiet = run_plan.plan([clean], Config(), form=form, devices=1)
    assert quiet.spec.pde_weight == 0.1 and quiet.record["pde_weight_rule"].startswith("0.1")
    given = run_plan.plan([noisy], Config(pde_weight=0.2), form=form, devices=1)
    assert given.spec.pde_weight == 0.2 and given.record["pde_weight_rule"] == "configured"
    assert "pde_weight" not in given.decided


def test_a_fit_says_the_data_raised_the_pde_weight():
    """A few steps on a noisy three-component volume: metrics.json's plan and notes name
    the weight 0.3 and its rule; the small fit's note lists only the sizes it set."""
    from helmholtz_pinn.fit.inversion import invert
    from helmholtz_pinn.forward.phantoms import add_noise

    x = np.meshgrid(*(np.arange(n) * 3e-3 for n in (12, 12, 4)), indexing="ij")[0]
    wave = np.exp(1j * 2 * np.pi * x / 21e-3)
    u = np.stack([0.2 * wave, wave, 0.5 * wave])[None].astype(np.complex64)
    noisy = Dataset(u=add_noise(u, -10.0, 0), frequency=[60.0], spacing=[3e-3] * 3)
    small = dict(width=16, mu_width=8, n_features=8, batch_size=64)
    result = invert(noisy, steps=20, sync_interval=10, pde_warmup=5, progress=False, **small)
    plan, notes = result.metrics["plan"], result.metrics["notes"]
    assert plan["pde_weight"] == 0.3 and "coarse sampling" in plan["pde_weight_rule"]
    raised = [n for n in notes if n.startswith("the PDE loss weighs 0.3, not 0.1")]
    assert len(raised) == 1 and plan["pde_weight_rule"] in raised[0]
    sizes = [n for n in notes if n.startswith("the small fit")]
    assert len(sizes) == 1 and "pde_weight" not in sizes[0]


def test_the_plans_of_both_laws_read_the_data_once(monkeypatch):
    """Under auto both laws' plans share the data's facts: u's wavelength is estimated
    once per dataset, not once per law, and both plans take the small fit."""
    from helmholtz_pinn.forward.phantoms import add_noise
    from helmholtz_pinn.pinn import forms

    x, _ = np.meshgrid(np.arange(24) * 3e-3, np.arange(24) * 3e-3, indexing="ij")
    wave = [np.exp(1j * 2 * np.pi * x / lam) for lam in (24e-3, 18e-3)]
    u = np.stack(wave)[:, None].astype(np.complex64)
    noisy = Dataset(u=add_noise(u, -20.0, 0), frequency=[45.0, 60.0], spacing=[3e-3] * 2)
    calls = []
    facts_of = defaults.facts_of
    monkeypatch.setattr(defaults, "facts_of", lambda d: calls.append(d) or facts_of(d))
    both = run_plan.plans([noisy], Config(), form=forms.get("hetero"), devices=1)
    assert len(both) == 2 and len(calls) == 1
    assert all(p.small_fit and p.spec.width == 64 for p in both)


def test_a_fit_says_the_data_chose_the_small_fit():
    """A noisy field at 6 voxels per wavelength, a few steps given: the run note names the
    small fit's settings the data decided, not the steps given."""
    from helmholtz_pinn.fit.inversion import invert
    from helmholtz_pinn.forward.phantoms import add_noise

    x, _ = np.meshgrid(np.arange(24) * 3e-3, np.arange(24) * 3e-3, indexing="ij")
    u = np.exp(1j * 2 * np.pi * x / 18e-3)[None, None].astype(np.complex64)
    noisy = Dataset(u=add_noise(u, -20.0, 0), frequency=[60.0], spacing=[3e-3] * 2)
    result = invert(noisy, steps=10, sync_interval=5, pde_warmup=3, progress=False)
    note = [n for n in result.metrics["notes"] if "the small fit" in n]
    assert len(note) == 1 and "width=64" in note[0] and "steps=" not in note[0], note
    assert result.config.width == 64 and result.config.steps == 10


def test_a_small_2d_field_gets_the_cpu_sized_networks_as_a_proposal():
    example = facts(grid=(30, 36), ndim=2, mask_voxels=1080, voxels_per_wavelength=9.2)
    size = defaults.network_size(example)
    assert size.value["width"] == 64 and size.value["n_features"] == 64 and not size.backed


def test_the_margin_follows_the_wavelength_and_keeps_the_grid():
    assert defaults.pde_margin(facts(voxels_per_wavelength=8.0), "navier").value == 1
    assert defaults.pde_margin(facts(voxels_per_wavelength=30.0), "navier").value == 5
    small = defaults.pde_margin(facts(voxels_per_wavelength=40.0, grid=(24, 24, 8)), "navier")
    assert small.value == 6 and not small.backed and "capped" in small.rule
    assert defaults.pde_margin(facts(ndim=2, grid=(80, 100)), "navier").value == 0
    assert defaults.pde_margin(facts(), "hetero").value == 0


def test_the_lbfgs_phase_as_today():
    assert defaults.lbfgs_runs(facts(mask_voxels=9000), "navier").value
    assert not defaults.lbfgs_runs(facts(), "navier").value  # 80 000 voxels
    assert not defaults.lbfgs_runs(facts(mask_voxels=9000, noise=0.07), "navier").value
    assert not defaults.lbfgs_runs(facts(mask_voxels=9000), "hetero").value
    assert not defaults.lbfgs_runs(facts(mask_voxels=9000), "navier", members=2).value


def test_overrides_are_config_fields():
    f = facts(mask_voxels=9000)
    fields = defaults.overrides(defaults.settings(f, "navier"))
    Config(**fields)  # every key is a field, every value valid
    assert "lbfgs_steps" not in fields
    assert defaults.overrides(defaults.settings(facts(), "navier"))["lbfgs_steps"] == 0


def test_facts_of_a_dataset():
    x, y = np.meshgrid(np.arange(40) * 1e-3, np.arange(30) * 1e-3, indexing="ij")
    u = np.stack([np.exp(1j * 2 * np.pi * x / 16e-3), np.exp(1j * 2 * np.pi * y / 20e-3)])
    data = Dataset(u=u[:, None].astype(np.complex64), frequency=[60.0, 80.0], spacing=[1e-3] * 2)
    f = defaults.facts_of(data)
    assert f.voxels_per_wavelength == pytest.approx(16.0, rel=0.01)
    assert (f.grid, f.mask_voxels, f.n_comp, f.ndim, f.n_freq) == ((40, 30), 1200, 1, 2, 2)
    assert f.field_of_view_m == pytest.approx(39e-3)
    with pytest.raises(InputError, match="no shear wavelength"):
        defaults.facts_of(
            Dataset(u=np.zeros((1, 1, 8, 8), np.complex64), frequency=[60.0], spacing=[1e-3] * 2)
        )


def test_the_plan_applies_the_noisy_rule_only_to_an_unset_factor():
    """A 24 x 24 plane wave at 6 voxels per wavelength: at -20 dB the plan takes the
    rule's factor and says so; clean it keeps today's; a configured factor or sigma_u
    is kept."""
    from helmholtz_pinn.forward.phantoms import add_noise

    x, _ = np.meshgrid(np.arange(24) * 3e-3, np.arange(24) * 3e-3, indexing="ij")
    u = np.exp(1j * 2 * np.pi * x / 18e-3)[None, None].astype(np.complex64)
    clean = Dataset(u=u, frequency=[60.0], spacing=[3e-3] * 2)
    noisy = Dataset(u=add_noise(u, -20.0, 0), frequency=[60.0], spacing=[3e-3] * 2)
    factor, rule = run_plan.u_factor([noisy], Config())
    assert factor == defaults.NOISY_FACTOR_U and "(< 14)" in rule
    factor, rule = run_plan.u_factor([clean], Config())  # clean, but coarse in 2-D
    assert factor == defaults.SIGMA_FACTOR_U_3D and "2-D data at 6" in rule
    assert run_plan.u_factor([noisy], Config(sigma_factor_u=0.7)) == (0.7, "configured")
    kept = run_plan.fourier_scales([noisy], Config(sigma_u=3.0), mu_ref=3000.0)
    assert kept[1] == 3.0
