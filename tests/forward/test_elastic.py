"""The elastic FE forward model against known answers: plane shear and compressional waves
converge at the P2 order, the dashpot is transparent to a normally incident wave, and
simulate_elastic returns a consistent Dataset."""

import numpy as np
import pytest
from skfem import Basis, ElementTetP2, ElementVector, Functional

from helmholtz_pinn.forward import elastic
from helmholtz_pinn.io.dataset import Dataset

RHO, G, ETA, FREQ = 1000.0, 3e3, 1.0, 100.0
OMEGA = 2 * np.pi * FREQ


def _constant(value):
    return lambda x: np.full(x.shape[1:], value)


def _plane_wave(k, component):
    """``u = e_component exp(-i k z)`` at points (3, ...)."""

    def exact(x):
        u = np.zeros((3, *x.shape[1:]), complex)
        u[component] = np.exp(-1j * k * x[2])
        return u

    return exact


@Functional
def _squared_error(w):
    du = w.uh_re - w.ex_re, w.uh_im - w.ex_im
    return sum((d[i] ** 2 for d in du for i in range(3)), 0.0)


def _l2_error(n, length, exact, *, lam, eta=ETA, top="dirichlet"):
    """Relative L2 error of the FE solution on an n^3-cube mesh of the cube [0, L]^3 with
    the exact solution as Dirichlet data on all faces but z = L, which is ``top``:
    "dirichlet" too, "dashpot" (absorbing) or "free" (traction-free)."""
    mesh = elastic.box_mesh((length,) * 3, length / n)
    facets = mesh.facets_satisfying(lambda x: np.isclose(x[2], length), boundaries_only=True)
    dashpot = facets if top == "dashpot" else None
    ops = elastic.assemble(mesh, _constant(G), _constant(eta), lam, RHO, dashpot)
    basis = ops.basis
    dofs = basis.get_dofs().flatten()
    if top != "dirichlet":
        dofs = dofs[~np.isclose(basis.doflocs[2, dofs], length)]
    comp = elastic.component_of_dofs(basis)
    values = exact(basis.doflocs[:, dofs])[comp[dofs], np.arange(dofs.size)]
    u = elastic.solve(ops, OMEGA, dofs, values)
    ex = exact(np.asarray(basis.global_coordinates()))
    fields = dict(uh_re=basis.interpolate(u.real), uh_im=basis.interpolate(u.imag))
    err = _squared_error.assemble(basis, **fields, ex_re=ex.real, ex_im=ex.imag)
    norm = _squared_error.assemble(
        basis, uh_re=basis.zeros(), uh_im=basis.zeros(), ex_re=ex.real, ex_im=ex.imag
    )
    return np.sqrt(err / norm)


@pytest.mark.parametrize("wave", ["shear", "compressional"])
def test_plane_wave_converges_at_third_order(wave):
    lam = 2e4  # compressional wavelength ~3x the shear one: both resolved on small meshes
    mu = G + 1j * OMEGA * ETA
    k = OMEGA * np.sqrt(RHO / (mu if wave == "shear" else lam + 2 * mu))  # Im k < 0: decays
    exact = _plane_wave(k, 0 if wave == "shear" else 2)
    length = 2 * np.pi / k.real  # one wavelength
    ns = (3, 6)
    errors = [_l2_error(n, length, exact, lam=lam) for n in ns]
    slope = np.log(errors[0] / errors[1]) / np.log(ns[1] / ns[0])
    assert slope >= 2.5, f"{wave}: L2 errors {errors} on {ns} cubes/wavelength, slope {slope}"
    assert errors[1] < 2e-2  # 0.6 % (shear), 1.0 % (compressional) at 6 cubes per wavelength


def test_dashpot_is_transparent_to_a_normally_incident_shear_wave():
    k = OMEGA * np.sqrt(RHO / G)  # elastic: the dashpot impedance rho c_s is exact
    exact, length = _plane_wave(k, 0), 2 * np.pi / k
    imposed = _l2_error(4, length, exact, lam=2e4, eta=0.0)
    absorbed = _l2_error(4, length, exact, lam=2e4, eta=0.0, top="dashpot")
    reflected = _l2_error(4, length, exact, lam=2e4, eta=0.0, top="free")
    assert absorbed < 3 * imposed, f"dashpot error {absorbed} vs Dirichlet error {imposed}"
    assert reflected > 0.3, f"a free face must reflect the wave; error {reflected}"


def test_sample_matches_skfem_probes_and_nested_dissection_is_a_permutation(rng):
    mesh = elastic.box_mesh((0.02, 0.03, 0.01), 4e-3)
    basis = Basis(mesh, ElementVector(ElementTetP2()))
    u = rng.standard_normal(basis.N) + 1j * rng.standard_normal(basis.N)
    points = rng.uniform(size=(3, 200)) * np.array([[0.02], [0.03], [0.01]])
    points[:, :20] = mesh.p[:, :20]  # vertices lie on many elements
    probe = basis.probes(points)
    expected = (probe @ u.real + 1j * (probe @ u.imag)).reshape(3, -1)
    np.testing.assert_allclose(elastic.sample(basis, u, points), expected, atol=1e-12)
    order = elastic.nested_dissection(basis.doflocs, leaf=64)
    np.testing.assert_array_equal(np.sort(order), np.arange(basis.N))


SMALL = dict(
    frequencies=(60.0, 100.0), shape=(40, 50, 4), spacing=(2e-3, 2e-3, 2.5e-3), mesh_size=10e-3
)


@pytest.fixture(scope="module")
def volume():
    return elastic.simulate_elastic("four-target", **SMALL)


def test_simulate_elastic_returns_a_valid_volume(volume):
    assert isinstance(volume, Dataset)
    assert volume.u.shape == (2, 3, 40, 50, 4) and volume.u.dtype == np.complex64
    assert np.isfinite(volume.u).all() and volume.mask.all()
    np.testing.assert_allclose(volume.spacing, [2e-3, 2e-3, 2.5e-3])
    assert volume.mu.shape == (2, 40, 50, 4)
    assert set(np.unique(volume.regions)) == {1, 2, 3, 4, 5}
    background = volume.mu[:, volume.regions == 1]
    np.testing.assert_allclose(background.real, 3e3)
    np.testing.assert_allclose(background.imag[1], 2 * np.pi * 100.0)
    np.testing.assert_allclose(volume.mu[:, volume.regions == 2].real, 10e3)
    rms = np.sqrt(np.mean(np.abs(volume.u) ** 2, axis=(2, 3, 4)))
    assert (rms > 0.01).all(), f"every component must carry a wave; rms {rms}"
    assert rms[:, 0].min() > rms[:, 2].max(), "x (largest drive) dominates z"


def test_slice_is_the_middle_plane_of_the_volume_and_noise_is_shared(volume):
    """One noisy ``output="slice"`` call (one FE solve per frequency): the middle z-plane of
    the volume with ``elastic.shared_noise`` of its seed added; the noise is -20 dB of the
    field's power at each frequency and the same absolute level on every component."""
    noisy = elastic.simulate_elastic("four-target", output="slice", noise_db=-20, seed=1, **SMALL)
    assert noisy.u.shape == (2, 3, 40, 50) and noisy.spacing.shape == (2,)
    np.testing.assert_array_equal(noisy.regions, volume.regions[..., 2])
    np.testing.assert_array_equal(noisy.mu, volume.mu[..., 2])
    middle = elastic.middle_slice(volume)
    np.testing.assert_array_equal(middle.u, volume.u[..., 2])  # z = 2 of 4
    again = elastic.shared_noise(middle, -20, seed=1)
    np.testing.assert_allclose(noisy.u, again.u, rtol=0, atol=1e-5)
    noise = noisy.u - middle.u
    power = np.mean(np.abs(middle.u) ** 2, axis=(1, 2, 3))
    ratio = np.mean(np.abs(noise) ** 2, axis=(1, 2, 3)) / power
    np.testing.assert_allclose(ratio, 0.01, rtol=0.1)
    per_component = np.mean(np.abs(noise) ** 2, axis=(2, 3))
    np.testing.assert_allclose(per_component / per_component.mean(1, keepdims=True), 1, rtol=0.1)


def test_two_ellipse_layout_with_absorbing_and_sliding_faces():
    data = elastic.simulate_elastic(
        "two-ellipse", faces="absorbing", z_faces="sliding", output="slice", **SMALL
    )
    assert data.u.shape == (2, 3, 40, 50) and np.isfinite(data.u).all()
    assert set(np.unique(data.regions)) == {1, 2, 3}
    assert sorted(np.unique(data.mu[0].real)) == [1.5e3, 3e3, 6e3]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(layout="three-target"), "unknown layout 'three-target'"),
        (dict(faces="open"), "faces must be one of"),
        (dict(output="slab"), "output must be one of"),
        (dict(frequencies=(60.0, -1.0)), "frequencies must be positive"),
        (dict(drive=(1.0, 0.0)), "drive must be 3"),
        (dict(lam=0.0), "lam"),
        (dict(shape=(10, 10, 10)), "does not fit"),
        (dict(precision="single"), "precision must be one of .*'single'"),
    ],
)
def test_bad_arguments_raise_with_the_value(kwargs, match):
    with pytest.raises(ValueError, match=match):
        elastic.simulate_elastic(**{"layout": "four-target", **kwargs})
