"""The clinical-like phantoms against known answers: a plane shear wave in springpot tissue
converges at the P2 order through the per-region complex-modulus assembly, a Voigt medium
gives elastic.assemble's matrix, the laws have their stated ratios, and simulate_clinical
returns a consistent masked Dataset."""

import dataclasses
import math

import numpy as np
import pytest
from skfem import Functional

from helmholtz_pinn.errors import InputError
from helmholtz_pinn.forward import clinical, elastic
from helmholtz_pinn.forward.clinical import ClinicalCase, Driver, Organ, Target, sphere
from helmholtz_pinn.io.dataset import Dataset
from helmholtz_pinn.laws import modulus as law_modulus
from helmholtz_pinn.laws import springpot
from helmholtz_pinn.laws.springpot import Springpot
from helmholtz_pinn.laws.voigt import Voigt

MM = 1e-3
RHO, LAM = 1000.0, 2e4  # lambda small: the compressional wave is resolved on tiny meshes


def _case(background, targets=(), **fields) -> ClinicalCase:
    """A 24 x 24 x 18 mm box of 3 mm voxels with a small organ and one driver."""
    base = dict(
        description="test",
        shape=(8, 8, 6),
        spacing=3 * MM,
        frequencies=(50.0,),
        background=background,
        targets=tuple(targets),
        organ=Organ((8 * MM, 8 * MM, 5 * MM), roughness=0.1, seed=3),
        drivers=(Driver("y0", (0.5, 0.5), 6 * MM, (1.0, 0.3, 0.2)),),
        rho=RHO,
        lam=LAM,
        mesh_size=6 * MM,
    )
    return ClinicalCase(**{**base, **fields})


# --------------------------------------------------------------------------- laws


def test_springpot_has_a_constant_loss_angle_and_grows_as_f_to_the_alpha():
    law = Springpot(3e3, 0.3, reference_frequency=50.0)
    f = np.array([30.0, 50.0, 60.0, 100.0])
    mu = law_modulus(law, f)
    np.testing.assert_allclose(mu.imag / mu.real, math.tan(0.3 * math.pi / 2), rtol=1e-12)
    np.testing.assert_allclose(mu.real[3] / mu.real[1], 2.0**0.3, rtol=1e-12)
    assert abs(law_modulus(law, 50.0)) == pytest.approx(3e3, rel=1e-12)
    same = springpot.from_storage(law_modulus(law, 50.0).real, 0.1)
    assert law_modulus(same, 50.0).real == pytest.approx(law_modulus(law, 50.0).real, rel=1e-12)


def test_voigt_loss_modulus_is_omega_eta():
    mu = law_modulus(Voigt(2e3, 1.5), np.array([40.0, 80.0]))
    np.testing.assert_allclose(mu.real, 2e3)
    np.testing.assert_allclose(mu.imag, 2 * np.pi * np.array([40.0, 80.0]) * 1.5)
    assert isinstance(law_modulus(Voigt(2e3, 1.5), 40.0), complex)


# --------------------------------------------------------------------------- assembly


@Functional
def _squared_error(w):
    du = w.uh_re - w.ex_re, w.uh_im - w.ex_im
    return sum((d[i] ** 2 for d in du for i in range(3)), 0.0)


def _l2_error(n: int, length: float, law, frequency: float, k: complex) -> float:
    """Relative L2 error of ``u = e_x exp(-i k z)`` on an n^3-cube mesh of [0, L]^3 with
    the exact solution as Dirichlet data on every face (as test_elastic._l2_error)."""
    case = _case(law, shape=(3, 3, 3), spacing=length / 3)
    ops = clinical.assemble(case, elastic.box_mesh((length,) * 3, length / n))
    basis = ops.basis

    def exact(x):
        u = np.zeros((3, *x.shape[1:]), complex)
        u[0] = np.exp(-1j * k * x[2])
        return u

    dofs = basis.get_dofs().flatten()
    comp = elastic.component_of_dofs(basis)
    values = exact(basis.doflocs[:, dofs])[comp[dofs], np.arange(dofs.size)]
    a = clinical.system_matrix(case, ops, frequency)
    u = elastic.solve_system(a, basis.doflocs, dofs, values)
    ex = exact(np.asarray(basis.global_coordinates()))
    fields = dict(uh_re=basis.interpolate(u.real), uh_im=basis.interpolate(u.imag))
    err = _squared_error.assemble(basis, **fields, ex_re=ex.real, ex_im=ex.imag)
    zero = dict(uh_re=basis.zeros(), uh_im=basis.zeros())
    return math.sqrt(err / _squared_error.assemble(basis, **zero, ex_re=ex.real, ex_im=ex.imag))


def test_springpot_plane_shear_wave_converges_at_third_order():
    law, frequency = Springpot(3e3, 0.3), 80.0
    omega = 2 * np.pi * frequency
    k = omega * np.sqrt(RHO / law_modulus(law, frequency))  # Im k < 0: decays along +z
    length = 2 * np.pi / k.real  # one wavelength
    ns = (3, 6)
    errors = [_l2_error(n, length, law, frequency, k) for n in ns]
    slope = np.log(errors[0] / errors[1]) / np.log(ns[1] / ns[0])
    assert slope >= 2.5, f"L2 errors {errors} on {ns} cubes per wavelength, slope {slope}"
    assert errors[1] < 2e-2


def test_voigt_medium_gives_the_matrix_of_elastic_assemble():
    case = _case(
        Voigt(3e3, 1.0),
        [sphere((0.4, 0.5, 0.5), 5 * MM, Voigt(6e3, 3.0))],
        gradient=(0.3, -0.2, 0.1),
    )
    mesh = elastic.box_mesh(tuple(clinical.extent(case)), 6 * MM)
    frequency = 60.0
    omega = 2 * np.pi * frequency

    def storage(x):
        return clinical.modulus(case, x, frequency).real

    def viscosity(x):
        return clinical.modulus(case, x, frequency).imag / omega

    ops = elastic.assemble(mesh, storage, viscosity, LAM, RHO, mesh.boundary_facets())
    expected = elastic.system_matrix(ops, omega)
    got = clinical.system_matrix(case, clinical.assemble(case, mesh), frequency)
    diff = abs(got - expected).max()
    assert diff <= 1e-12 * abs(expected).max(), f"largest difference {diff}"


# --------------------------------------------------------------------------- simulation

SOFT, STIFF = Springpot(1.5e3, 0.25), Voigt(6e3, 2.0)
TINY = _case(
    Springpot(3e3, 0.25),
    [
        sphere((0.35, 0.5, 0.5), 4.5 * MM, SOFT),
        Target("ellipsoid", (0.65, 0.5, 0.5), (4 * MM, 2.5 * MM, 2.5 * MM), STIFF, (0, 0, 0.5)),
    ],
    gradient=(0.0, 0.2, 0.0),
)


@pytest.fixture(scope="module")
def tiny():
    return clinical.simulate_clinical(TINY)


def test_simulate_clinical_returns_a_masked_dataset_with_the_true_modulus(tiny):
    assert isinstance(tiny, Dataset)
    assert tiny.u.shape == (1, 3, 8, 8, 6) and tiny.u.dtype == np.complex64
    assert tiny.mu.shape == (1, 8, 8, 6) and tiny.mu.dtype == np.complex128
    np.testing.assert_allclose(tiny.spacing, 3 * MM)
    centres = np.stack(
        np.meshgrid(*[(np.arange(n) + 0.5) * 3 * MM for n in (8, 8, 6)], indexing="ij")
    )
    np.testing.assert_array_equal(tiny.mask, clinical.organ_mask(TINY, centres))
    assert 0.1 < tiny.mask.mean() < 0.9
    # NaN outside the organ reaches the Dataset, which stores it as 0 (its convention)
    assert (tiny.u[..., ~tiny.mask] == 0).all()
    assert np.isfinite(tiny.u).all() and (np.abs(tiny.u[..., tiny.mask]) > 0).all()
    assert set(np.unique(tiny.regions)) == {1, 2, 3}
    soft = tiny.regions == 2
    np.testing.assert_allclose(tiny.mu[0, soft], law_modulus(SOFT, 50.0))
    np.testing.assert_allclose(tiny.mu[0, tiny.regions == 3], law_modulus(STIFF, 50.0))
    assert soft[2, 4, 3], "the soft sphere's centre voxel"
    assert tiny.mu[0, 2, 4, 3].real < tiny.mu[0, 4, 1, 3].real * 0.9  # softer than background
    background = tiny.mu[0, tiny.regions == 1]
    assert np.ptp(background.real) > 0.1 * background.real.mean()  # the gradient


def test_noise_is_reproducible_inside_the_mask_and_frequencies_can_be_replaced(tiny):
    """The noisy two-frequency call equals the clean single-frequency fields stacked (50 Hz:
    the fixture; 60 Hz solved alone) with the seed's noise added again
    (``elastic.shared_noise``, what ``simulate_clinical`` applies); another seed differs;
    the noise is -20 dB of each frequency's power inside the organ. Three FE solves, not
    the six of three two-frequency calls."""
    a = clinical.simulate_clinical(TINY, noise_db=-20, seed=5, frequencies=(50.0, 60.0))
    at_60 = clinical.simulate_clinical(TINY, frequencies=(60.0,))
    clean = dataclasses.replace(
        tiny,
        u=np.concatenate([tiny.u, at_60.u]),
        frequency=np.array([50.0, 60.0]),
        mu=np.concatenate([tiny.mu, at_60.mu]),
    )
    np.testing.assert_array_equal(a.mu, clean.mu)
    np.testing.assert_array_equal(a.u, elastic.shared_noise(clean, -20, seed=5).u)
    assert not np.array_equal(a.u, elastic.shared_noise(clean, -20, seed=6).u)
    assert a.u.shape == (2, 3, 8, 8, 6) and (a.u[..., ~a.mask] == 0).all()
    for f in range(2):
        noise = a.u[f][:, a.mask] - clean.u[f][:, clean.mask]
        ratio = np.mean(np.abs(noise) ** 2) / np.mean(np.abs(clean.u[f][:, clean.mask]) ** 2)
        assert 0.005 < ratio < 0.02, f"noise power ratio {ratio} at -20 dB, frequency {f}"


def test_family_members_are_valid_and_cover_both_laws_and_splits():
    names = list(clinical.FAMILY)
    for split in ("tune-", "heldout-"):
        members = [clinical.FAMILY[n] for n in names if n.startswith(split)]
        assert len(members) >= 3, split
        assert any(isinstance(m.background, Voigt) for m in members), split
        assert any(len(m.frequencies) == 1 for m in members), split
    for name, case in clinical.FAMILY.items():
        clinical.check_case(case)
        centres = np.stack(
            np.meshgrid(*[(np.arange(n) + 0.5) * case.spacing for n in case.shape], indexing="ij")
        )
        regions, mask = clinical.region_labels(case, centres), clinical.organ_mask(case, centres)
        for label in range(2, 2 + len(case.targets)):
            assert mask[regions == label].all(), f"{name}: target {label - 2} leaves the organ"


def test_default_mesh_size_resolves_the_shortest_wave():
    case = _case(Springpot(3e3, 0.25), [sphere((0.5, 0.5, 0.5), 3 * MM, SOFT)], mesh_size=None)
    wave = math.sqrt(abs(law_modulus(SOFT, 50.0)) / RHO) / 50.0
    assert clinical.mesh_size(case) == pytest.approx(wave / 8)


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: law_modulus(Springpot(3e3, 1.2), 50.0), r"alpha in \(0, 1\).*alpha=1.2"),
        (lambda: law_modulus(Voigt(3e3, 1.0), -5.0), r"frequency must be > 0 Hz; got -5.0"),
        (
            lambda: clinical.simulate_clinical("heldout-nope"),
            "unknown clinical case 'heldout-nope'",
        ),
        (
            lambda: clinical.check_case(
                _case(Springpot(3e3, 0.25), [sphere((0.9, 0.5, 0.5), 5 * MM, SOFT)])
            ),
            r"target 0 \(semi-axes \(0.005, 0.005, 0.005\) m at \(0.9, 0.5, 0.5\).*does not fit",
        ),
        (
            lambda: clinical.check_case(
                _case(Springpot(3e3, 0.25), [sphere((0.5, 0.5, 0.5), 3 * MM, Springpot(1e3, 0.0))])
            ),
            r"target 0 law needs .*alpha=0.0",
        ),
        (
            lambda: clinical.check_case(
                _case(Voigt(3e3, 1.0), drivers=(Driver("w0", (0.5, 0.5), 5 * MM, (1, 0, 0)),))
            ),
            "driver 0 must be a Driver on a face of .*'w0'",
        ),
        (
            lambda: clinical.simulate_clinical(TINY, frequencies=(50.0, 0.0)),
            r"frequencies must be positive \(Hz\); got \(50.0, 0.0\)",
        ),
    ],
)
def test_bad_arguments_raise_input_error_quoting_the_value(make, match):
    with pytest.raises(InputError, match=match):
        make()
