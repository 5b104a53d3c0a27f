"""Training invariants: scan block == single steps, no recompiles, determinism, roll-back."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from settings import SMALL, plane_wave_dataset, plane_wave_slices

from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import ConfigError, DivergenceError, InputError
from helmholtz_pinn.fit import host_loop, inversion, placement
from helmholtz_pinn.fit import plan as run_plan
from helmholtz_pinn.fit.plan import prepare_one, program
from helmholtz_pinn.fit.results import kept_members
from helmholtz_pinn.pinn import forms, train
from helmholtz_pinn.pinn.predict import predict


def init(prep, seed=0, lr=1e-3):
    return train.init_state(prep.spec, seed, prep.sigma_u, prep.sigma_mu, lr)


def one_device(prep, members=0, shared=False):
    return placement.Placement(tuple(jax.devices()[:1]), members, shared)


@pytest.fixture(scope="module")
def prepared():
    return prepare_one(plane_wave_dataset(), Config(**SMALL))


@pytest.mark.parametrize("pde", ["helmholtz", "hetero"])
def test_scan_block_equals_single_steps(pde):
    prep = prepare_one(plane_wave_dataset(), Config(**SMALL, pde=pde))
    state0 = init(prep)
    blocked, losses = placement.compile_block(prep.spec, 5, one_device(prep))(state0, prep.problem)
    step = jax.jit(train.train_step, static_argnums=2)
    state, single = state0, []
    for _ in range(5):
        state, loss = step(state, prep.problem, prep.spec)
        single.append(loss)
    assert int(blocked.step) == int(state.step) == 5
    np.testing.assert_allclose(np.asarray(losses), np.stack(single), rtol=1e-5)
    for a, b in zip(jax.tree.leaves(blocked.params), jax.tree.leaves(state.params), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # the weights moved: the comparison is not between two untouched states
    moved = jax.tree.map(lambda a, b: jnp.max(jnp.abs(a - b)), blocked.params, state0.params)
    assert max(jax.tree.leaves(moved)) > 1e-4


def test_a_new_seed_step_count_or_rate_does_not_recompile():
    """The compiled block is keyed by the program only: a second fit with another seed,
    step count and learning rate reuses it (same object, no new cache entry)."""
    ds = plane_wave_dataset()
    inversion.invert(ds, Config(**SMALL), progress=False)
    prep = prepare_one(ds, Config(**SMALL))
    block = placement.compile_block(prep.spec, SMALL["sync_interval"], one_device(prep))
    size = block.cache_size()
    assert size >= 1  # compiled by the first fit
    other = Config(**{**SMALL, "seed": 3, "steps": 15, "learning_rate": 5e-4})
    inversion.invert(ds, other, progress=False)
    again = placement.compile_block(
        prepare_one(ds, other).spec, SMALL["sync_interval"], one_device(prep)
    )
    assert again is block and block.cache_size() == size
    # a change of the program (network width) is a new entry: the test can fail
    wider = prepare_one(ds, Config(**{**SMALL, "width": 24})).spec
    assert placement.compile_block(wider, SMALL["sync_interval"], one_device(prep)) is not block


def test_init_is_one_program_for_every_seed_and_takes_any_seed(prepared):
    """The initialisation compiles once per network and scales, not per seed or rate;
    a seed past int32 works (the key is made outside the program) and keeps its own key."""
    before = train._init_program(prepared.spec).cache_size()
    a = init(prepared, seed=1)
    after = train._init_program(prepared.spec).cache_size()
    b = init(prepared, seed=2**40, lr=5e-4)
    assert train._init_program(prepared.spec).cache_size() == after <= before + 1
    data_key = jax.random.split(jax.random.PRNGKey(2**40), 3)[2]
    np.testing.assert_array_equal(np.asarray(b.key), np.asarray(data_key))
    kernels = [k for k in a.params["u"] if k.endswith("kernel")]  # biases start at zero
    assert kernels and all(not np.array_equal(a.params["u"][k], b.params["u"][k]) for k in kernels)


def test_state_dtypes_and_shapes_are_stable(prepared):
    state0 = init(prepared)
    state1, _ = placement.compile_block(prepared.spec, 5, one_device(prepared))(
        state0, prepared.problem
    )
    spec0 = jax.tree.map(lambda a: (a.shape, a.dtype), state0)
    spec1 = jax.tree.map(lambda a: (a.shape, a.dtype), state1)
    assert spec0 == spec1


def test_same_seed_same_modulus_different_seed_differs():
    ds = plane_wave_dataset()
    a = inversion.invert(ds, Config(**SMALL), progress=False)
    b = inversion.invert(ds, Config(**SMALL), progress=False)
    c = inversion.invert(ds, Config(**SMALL, seed=1), progress=False)
    np.testing.assert_array_equal(a.mu, b.mu)
    assert np.max(np.abs(a.mu - c.mu)) > 1e-3 * np.max(np.abs(a.mu))


def _poisoned(prepared, bad_calls):
    """A block whose first ``bad_calls`` calls return NaN losses (a forced divergence)."""
    real = placement.compile_block(prepared.spec, 5, one_device(prepared))
    calls = {"n": 0, "lr": []}

    def poisoned(state, problem):
        calls["n"] += 1
        calls["lr"].append(float(state.opt_state.hyperparams["learning_rate"]))
        new, losses = real(state, problem)
        return new, losses * (jnp.nan if calls["n"] <= bad_calls else 1.0)

    return poisoned, calls


def _plan(cfg):
    """The plan of a plane-wave fit with ``cfg`` on one device (the host loop reads its
    Adam steps and its request's schedule)."""
    data = plane_wave_dataset()
    form = forms.get(forms.resolve(cfg.pde, data.n_comp))
    return run_plan.plan([data], cfg, form=form, devices=1)


def test_divergence_rolls_back_and_lowers_the_rate(prepared):
    cfg = Config(**SMALL)
    block, calls = _poisoned(prepared, bad_calls=1)
    state, history = host_loop.run(
        init(prepared), prepared.problem, block, _plan(cfg), progress=False
    )
    assert int(state.step) == cfg.steps and len(history) == cfg.steps // cfg.sync_interval
    rate = _plan(cfg).config.learning_rate  # decided by the plan: SMALL leaves it None
    assert calls["lr"][:2] == pytest.approx([rate, rate / 2])
    assert history[-1]["retries"] == 1


def test_persistent_divergence_raises(prepared):
    block, _ = _poisoned(prepared, bad_calls=100)
    with pytest.raises(DivergenceError, match="diverged at step 0"):
        host_loop.run(
            init(prepared), prepared.problem, block, _plan(Config(**SMALL)), progress=False
        )


def test_callback_stops_early(prepared):
    seen = []

    def stop(record):
        seen.append(record["step"])
        return True

    block = placement.compile_block(prepared.spec, 5, one_device(prepared))
    state, history = host_loop.run(
        init(prepared),
        prepared.problem,
        block,
        _plan(Config(**SMALL)),
        callback=stop,
        progress=False,
    )
    assert seen == [5] and len(history) == 1 and int(state.step) == 5


def test_pde_weight_warms_up_linearly(prepared):
    spec = dataclasses.replace(prepared.spec, pde_weight=2.0, pde_warmup=100)
    w = [float(train.pde_weight(jnp.asarray(s), spec)) for s in (0, 50, 100, 500)]
    assert w == pytest.approx([0.0, 1.0, 2.0, 2.0])


def test_plateau_lowers_rate_after_patience():
    cfg = Config(plateau_patience=2, plateau_factor=0.5, min_lr=1e-4)
    p = host_loop.Plateau(lr=1e-3)
    rates = [p.update(v, cfg) for v in (1.0, 0.5, 0.5, 0.5, 0.5, 0.5)]
    assert rates == pytest.approx([1e-3, 1e-3, 1e-3, 5e-4, 5e-4, 2.5e-4])


def test_ensemble_members_identical_seeds_agree_and_distinct_seeds_spread(prepared):
    """vmapped members started from the same state stay identical (std 0); seeds differ."""
    s0 = jax.device_get(init(prepared))
    plan = one_device(prepared, members=2, shared=True)
    block = placement.compile_block(prepared.spec, 5, plan)
    same, _ = host_loop.run(
        train.stack_trees([s0, s0]),
        prepared.problem,
        block,
        _plan(Config(**SMALL)),
        members=2,
        progress=False,
    )
    a, b = train.unstack_tree(same, 2)
    for x, y in zip(jax.tree.leaves(a.params), jax.tree.leaves(b.params), strict=True):
        np.testing.assert_array_equal(x, y)
    cfg = Config(**SMALL, ensemble=3, ensemble_keep=float("inf"))
    res = inversion.invert(plane_wave_dataset(), cfg, progress=False)
    assert res.mu_std.shape == res.mu.shape
    assert np.all(res.mu_std.real[0] > 0)
    assert res.metrics["ensemble"] == 3 and res.metrics["ensemble_dropped_seeds"] == []


def test_kept_members_are_those_within_the_factor_of_the_lowest_final_loss():
    """The small elastic fixture's eight seeds (seeds.jsonl): the two in a poorer optimum
    (3.3-3.4x the lowest final loss) are dropped at the default factor 2, none at inf;
    non-finite losses are dropped unless every loss is."""
    losses = [0.00246, 0.00473, 0.00161, 0.00140, 0.00250, 0.00190, 0.00460, 0.00170]
    assert kept_members(losses, Config().ensemble_keep) == [0, 2, 3, 4, 5, 7]
    assert kept_members(losses, float("inf")) == list(range(8))
    assert kept_members([1.0, np.nan, 1.5], 2.0) == [0, 2]
    assert kept_members([np.nan, np.nan], 2.0) == [0, 1]
    with pytest.raises(ConfigError, match="ensemble_keep must be >= 1"):
        Config(ensemble_keep=0.5)


def test_an_ensemble_keeping_one_member_gives_that_seeds_own_fit():
    """ensemble_keep=1 keeps the lowest-loss member only: its map equals the single fit
    of that seed, the other seed is named and warned about, and there is no spread."""
    data = plane_wave_dataset()
    with pytest.warns(UserWarning, match="a poorer optimum"):
        res = inversion.invert(data, Config(**SMALL, ensemble=2, ensemble_keep=1.0), progress=False)
    best = int(np.argmin(res.metrics["final_loss"]))
    assert res.metrics["ensemble_dropped_seeds"] == [1 - best]
    assert res.mu_std is None
    alone = inversion.invert(data, Config(**SMALL, seed=best), progress=False)
    np.testing.assert_allclose(res.mu, alone.mu, rtol=2e-3)
    np.testing.assert_allclose(res.u_fit, alone.u_fit, rtol=2e-3, atol=1e-3)


def test_a_slicewise_ensemble_keeps_each_slices_lowest_loss_member():
    """Slicewise with ensemble_keep=1: each z-slice's map and u_fit are its lowest-loss
    seed's, equal to the slicewise fit of that seed alone; the other seed is named per
    slice (slice -> seeds) and warned about; one member per slice leaves no spread."""
    volume = plane_wave_slices(n=8)  # three slices
    cfg = Config(**SMALL, ensemble=2, ensemble_keep=1.0)
    with pytest.warns(UserWarning, match="poorer optimum"):
        res = inversion.invert(volume, cfg, slicewise=True, progress=False)
    best = np.reshape(res.metrics["final_loss"], (3, 2)).argmin(axis=1)  # slice-major rows
    dropped = {str(k): [1 - int(b)] for k, b in enumerate(best)}
    assert res.metrics["ensemble_dropped_seeds"] == dropped
    for seed in set(best.tolist()):
        alone = inversion.invert(volume, Config(**SMALL, seed=seed), slicewise=True, progress=False)
        for k in np.flatnonzero(best == seed):
            np.testing.assert_allclose(res.mu[..., k], alone.mu[..., k], rtol=2e-3)
            np.testing.assert_allclose(res.u_fit[..., k], alone.u_fit[..., k], rtol=2e-3, atol=1e-3)
    assert np.all(res.mu_std == 0)


def test_the_through_plane_fourier_ratio_scales_only_the_third_axis_of_3d_networks():
    """sigma_ratio_z: in 3-D the z rows of both Fourier matrices are ratio_z times the
    isotropic ones and the in-plane rows are unchanged; a 2-D state ignores it; the
    default u-network, Fourier frequencies, mu-network, batch and pressure network are
    256, 128, 64 x 2, 2048, mu in 2-D and 512, 256, 128 x 3, 2048, u in 3-D, and a
    configured value wins."""
    default = Config().replace(
        width=None, n_features=None, mu_width=None, mu_depth=None, batch_size=None
    )
    sizes = [
        (s.width, s.n_features, s.mu_width, s.mu_depth, s.batch_size, s.aux_network)
        for s in (program(default, 2, 1, 3), program(default, 3, 1, 3))
    ]
    assert sizes == [(256, 128, 64, 2, 2048, "mu"), (512, 256, 128, 3, 2048, "u")]
    assert program(default.replace(aux_network="mu"), 3, 1, 3).aux_network == "mu"
    cfg = Config(**SMALL)
    spec3, spec2 = program(cfg, 3, 1, 3), program(cfg, 2, 1, 3)
    assert (spec3.width, spec3.n_features, spec3.batch_size) == (16, 8, 64)
    iso = train.init_state(spec3, 0, 2.0, 1.0, 1e-3)
    aniso = train.init_state(spec3, 0, 2.0, 1.0, 1e-3, ratio_z=0.25)
    for net in ("u", "mu"):
        b_iso, b = np.asarray(iso.consts[net]["B"]), np.asarray(aniso.consts[net]["B"])
        assert b.shape[0] == 3
        np.testing.assert_array_equal(b[:2], b_iso[:2])
        np.testing.assert_allclose(b[2], 0.25 * b_iso[2], rtol=1e-6)
        assert np.abs(b_iso[2]).max() > 0
    flat = train.init_state(spec2, 0, 2.0, 1.0, 1e-3, ratio_z=0.25)
    np.testing.assert_array_equal(
        np.asarray(flat.consts["u"]["B"]),
        np.asarray(train.init_state(spec2, 0, 2.0, 1.0, 1e-3).consts["u"]["B"]),
    )


def test_a_3d_fit_initialises_with_the_configured_through_plane_ratio(monkeypatch):
    """inversion.invert passes Config.sigma_ratio_z to init_state (the fit's B matrices)."""
    seen = []
    original = train.init_state

    def spy(spec, *args, **kwargs):
        state = original(spec, *args, **kwargs)
        seen.append((spec.ndim, np.asarray(state.consts["u"]["B"])))
        return state

    monkeypatch.setattr(train, "init_state", spy)
    volume = plane_wave_slices(n=8, gs=(3000.0, 3000.0, 3000.0))
    cfg = Config(**SMALL).replace(steps=10, sync_interval=10, sigma_ratio_z=0.25)
    inversion.invert(volume, cfg, slicewise=False, progress=False, devices=1)
    b = [b for ndim, b in seen if ndim == 3][0]
    inplane, through = np.abs(b[:2]).mean(), np.abs(b[2]).mean()
    assert through < 0.5 * inplane  # ratio 0.25 of an isotropic N(0, sigma^2) draw


def test_prediction_in_padded_pieces_equals_one_piece_and_compiles_one_program():
    """predict splits a grid into equal pieces (the last padded): 10 points in pieces of
    at most 4 (3 pieces of 4, two rows padded) give the values of one piece of 10 to
    float32 rounding, through one compiled program of 4 points."""
    from helmholtz_pinn.pinn import predict as on_grid

    spec = program(Config(**SMALL), 2, 1, 3)
    state = train.init_state(spec, 0, 2.0, 1.0, 1e-3)
    x = np.random.default_rng(0).uniform(-1, 1, (10, 2)).astype(np.float32)
    omega_ratio = np.ones(1, np.float32)
    on_grid._predict_fn.cache_clear()
    u4, mu4 = predict(state, spec, x, omega_ratio, chunk=4)
    assert on_grid._predict_fn.cache_info().currsize == 1
    u10, mu10 = predict(state, spec, x, omega_ratio)
    assert u4.shape == u10.shape == (10, 1, 3) and mu4.shape == mu10.shape == (10, 1)
    np.testing.assert_allclose(u4, u10, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mu4, mu10, rtol=1e-5, atol=1e-6)


def test_the_pde_margin_leaves_out_the_rim_rows_of_the_pde_term_only():
    """The PDE loss with a margin is the PDE loss over the interior rows alone; the data
    loss still covers every row (16 x 16 plane waves, margin 3: 10 x 10 interior)."""
    prep = prepare_one(plane_wave_dataset(), Config(**SMALL, pde_margin=3))
    problem, (params, consts) = prep.problem, init(prep)[:2]
    inner = np.asarray(problem.pde) > 0
    assert inner.sum() == 100 and problem.pde.shape == (256,)
    every = jnp.ones(256, jnp.float32)
    terms = train.loss_terms(
        params, consts, prep.spec, problem, (problem.x, problem.u, every, every)
    )
    data, pde = train.loss_terms(
        params, consts, prep.spec, problem, (problem.x, problem.u, every, jnp.asarray(problem.pde))
    )
    sub = (problem.x[inner], problem.u[inner], every[:100], every[:100])
    _, pde_inner = train.loss_terms(params, consts, prep.spec, problem, sub)
    np.testing.assert_allclose(data, terms[0], rtol=1e-6)
    np.testing.assert_allclose(pde, pde_inner, rtol=1e-5)
    assert abs(float(pde) - float(terms[1])) > 1e-3 * float(terms[1])  # the rim did count before


def test_the_pde_margin_default_is_a_sixth_of_the_wavelength_for_3d_navier_fits_only():
    from helmholtz_pinn.fit.plan import pde_margin
    from helmholtz_pinn.io.dataset import Dataset
    from helmholtz_pinn.pinn.forms import get
    from helmholtz_pinn.pinn.problem import pde_rows

    def volume(h):  # 100 Hz, mu_ref 3.2 kPa: lambda_min = sqrt(3.2) / 100 m = 17.9 mm
        return Dataset(np.ones((1, 3, 4, 4, 4), complex), np.array([100.0]), np.full(3, h))

    cfg, navier, hetero = Config(mu_ref=3200.0), get("navier"), get("hetero")
    assert pde_margin(volume(1e-3), cfg, navier, cfg.mu_ref) == 3  # 17.9 / 6 = 2.98 voxels
    assert pde_margin(volume(2e-3), cfg, navier, cfg.mu_ref) == 1  # 1.49 voxels
    assert pde_margin(volume(5e-3), cfg, navier, cfg.mu_ref) == 1  # at least one voxel
    assert pde_margin(volume(1e-3), cfg, hetero, cfg.mu_ref) == 0
    assert pde_margin(plane_wave_dataset(), cfg, navier, cfg.mu_ref) == 0  # 2-D
    assert pde_margin(plane_wave_dataset(), cfg.replace(pde_margin=1), hetero, cfg.mu_ref) == 1
    with pytest.raises(ConfigError, match="pde_margin"):
        Config(pde_margin=-1)
    mask = np.ones((8, 9, 4), bool)
    rows = pde_rows(mask, 2)  # in-plane only: every z-slice keeps its 4 x 5 interior
    assert rows.shape == (288,) and rows.sum() == 4 * 5 * 4
    with pytest.raises(InputError, match="pde_margin=5.* largest .* is 3"):
        pde_rows(mask, 5)


def test_the_pde_margin_is_taken_from_the_field_of_views_edges_not_an_organ_masks_rim():
    """A mask inside the field of view (an organ, NaN outside) keeps its rim's residual;
    where the mask reaches the field of view's edge (a slab's face) the margin applies."""
    from helmholtz_pinn.pinn.problem import pde_rows

    organ = np.zeros((12, 12), bool)
    organ[3:9, 3:9] = True  # 3 voxels from every edge
    assert pde_rows(organ, 2).sum() == 36  # no voxel within 2 of an edge: all kept
    assert pde_rows(organ, 4).sum() == 16  # 4 voxels from the edges: rows 4..7 kept
    slab = np.ones((12, 12), bool)
    slab[:, 9:] = False  # reaches three edges; its inner side (column 8) is tissue
    rows = pde_rows(slab, 2).reshape(12, 9)
    assert rows[2:10, 2:].all() and not rows[:2].any() and not rows[:, :2].any()
