"""Each viscoelastic law against known answers: its network modulus at zero output is its
documented start, its propagated gradient equals jax.jacfwd, its modulus from parameters
(the simulators') equals the network's for matching parameters and gives back the
parameters read off it; a law defined here (Maxwell) reaches the Config, Spec's frequency
check and the three simulators (finite differences, the elastic slab, the clinical-like
family) through the registry alone."""

import dataclasses
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from helmholtz_pinn import laws
from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import ConfigError, InputError
from helmholtz_pinn.fit.plan import program
from helmholtz_pinn.forward import clinical, elastic, phantoms
from helmholtz_pinn.laws import springpot, springpot_dashpot
from helmholtz_pinn.laws._channels import ETA_SCALE, SOFTPLUS_ONE

RATIO = np.array([0.5, 0.75, 1.0])  # omega_f / omega_max
F_MAX, MU_REF = 80.0, 3000.0  # Hz, Pa


def softplus(x):
    return np.logaddexp(0.0, x)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_the_registry_lists_the_law_modules():
    assert laws.names() == ("per-frequency", "springpot", "springpot-dashpot", "voigt")
    assert laws.auto() == ("springpot", "voigt")
    assert laws.resolve("auto", 1) == "per-frequency"
    with pytest.raises(ConfigError, match="unknown mu_model 'zener'; available: per-freq"):
        laws.get("zener")
    with pytest.raises(ConfigError, match="needs 2 or more frequencies; the data have 1"):
        laws.resolve("springpot-dashpot", 1)


START = {  # mu' at zero network output, as each law's docstring states it
    "voigt": 1 + 1j * ETA_SCALE * RATIO,
    "per-frequency": np.full(3, 1 + 1j * ETA_SCALE),
    "springpot": (1j * RATIO) ** springpot.ALPHA_START,
    "springpot-dashpot": (1j * RATIO) ** springpot.ALPHA_START
    + 1j * RATIO * ETA_SCALE * springpot_dashpot.DASHPOT_START,
}


@pytest.mark.parametrize("name", laws.names())
def test_zero_output_is_the_documented_start(name):
    law = laws.get(name)
    with jax.enable_x64(True):
        mu, _ = law.network(jnp.zeros((1, law.channels(3))), None, jnp.asarray(RATIO))
    np.testing.assert_allclose(np.asarray(mu)[0], START[name], rtol=1e-12)
    if name == "springpot":  # its damping ratio at the start is ETA_SCALE, as Voigt's
        assert np.tan(springpot.ALPHA_START * np.pi / 2) == pytest.approx(ETA_SCALE)


@pytest.mark.parametrize("name", laws.names())
def test_the_gradient_equals_jacfwd(name):
    law = laws.get(name)
    with jax.enable_x64(True):
        w = jax.random.normal(jax.random.key(0), (2, law.channels(3)), dtype=jnp.float64)

        def channels(p):
            return jnp.sin(p @ w)

        x = jax.random.uniform(jax.random.key(1), (4, 2), dtype=jnp.float64)
        grad = jnp.moveaxis(jax.vmap(jax.jacfwd(channels))(x), -1, 0)
        _, got = law.network(jax.vmap(channels)(x), grad, jnp.asarray(RATIO))

        def mu_at(p):
            mu = law.network(channels(p)[None], None, jnp.asarray(RATIO))[0][0]
            return jnp.stack([mu.real, mu.imag])

        ref = jnp.moveaxis(jax.vmap(jax.jacfwd(mu_at))(x), -1, 0)  # (d, N, 2, F)
    np.testing.assert_allclose(got.real, ref[:, :, 0], atol=1e-12)
    np.testing.assert_allclose(got.imag, ref[:, :, 1], atol=1e-12)


OMEGA_MAX = 2 * np.pi * F_MAX
PARAMETERS = {  # channels o -> the law's parameters in SI units (mu_ref, omega_max above)
    "voigt": lambda o: laws.get("voigt").parameters(
        MU_REF * softplus(o[0] + SOFTPLUS_ONE),
        MU_REF * ETA_SCALE * softplus(o[1] + SOFTPLUS_ONE) / OMEGA_MAX,
    ),
    "springpot": lambda o: springpot.Springpot(
        MU_REF * softplus(o[0] + SOFTPLUS_ONE), sigmoid(o[1] + springpot.ALPHA_OFFSET), F_MAX
    ),
    "springpot-dashpot": lambda o: springpot_dashpot.SpringpotDashpot(
        MU_REF * softplus(o[0] + SOFTPLUS_ONE),
        sigmoid(o[1] + springpot.ALPHA_OFFSET),
        MU_REF * ETA_SCALE * softplus(o[2] + springpot_dashpot.DASHPOT_OFFSET) / OMEGA_MAX,
        F_MAX,
    ),
}


@pytest.mark.parametrize("name", sorted(PARAMETERS))
def test_the_simulators_modulus_is_the_networks_and_reads_back(name):
    law = laws.get(name)
    o = np.array([0.4, -0.7, 0.3])[: law.channels(3)]
    with jax.enable_x64(True):
        mu, _ = law.network(jnp.asarray(o[None]), None, jnp.asarray(RATIO))
    params = PARAMETERS[name](o)
    f = RATIO * F_MAX
    np.testing.assert_allclose(laws.modulus(params, f), MU_REF * np.asarray(mu)[0], rtol=1e-12)
    read = law.read(laws.modulus(params, f)[:, None], 2 * np.pi * f)
    for key, value in read.items():
        assert value[0] == pytest.approx(getattr(params, key), rel=1e-9), key
    assert set(read) == set(law.maps)


def test_parameters_are_checked_quoting_them():
    with pytest.raises(InputError, match=r"law needs storage > 0 Pa .*storage=-1.0"):
        laws.modulus(laws.get("voigt").parameters(-1.0, 1.0), 50.0)
    with pytest.raises(InputError, match="law must be the parameters of a law; got"):
        laws.modulus((3e3, 1.0), 50.0)


# --------------------------------------------------------------------------- a third law


class Maxwell(NamedTuple):
    """A spring ``storage`` G Pa in series with a dashpot ``viscosity`` eta Pa s."""

    storage: float
    viscosity: float


def maxwell_network(value, grad, omega_ratio):
    """mu' = i r eta' G / (G + i r eta'), G = softplus(o_0 + c), eta' = ETA_SCALE
    softplus(o_1 + c); its gradient by the chain rule."""
    g = jax.nn.softplus(value[..., :1] + SOFTPLUS_ONE)
    e = ETA_SCALE * jax.nn.softplus(value[..., 1:2] + SOFTPLUS_ONE)
    d = 1j * omega_ratio[None, :] * e
    mu = d * g / (g + d)
    if grad is None:
        return mu, None
    dg = jax.nn.sigmoid(value[..., :1] + SOFTPLUS_ONE)[None] * grad[..., :1]
    de = ETA_SCALE * jax.nn.sigmoid(value[..., 1:2] + SOFTPLUS_ONE)[None] * grad[..., 1:2]
    dd = 1j * omega_ratio[None, None, :] * de
    d, g = d[None], g[None]
    return mu, (d**2 * dg + g**2 * dd) / (g + d) ** 2


def maxwell_modulus(p: Maxwell, f):
    """mu = i omega eta G / (G + i omega eta) (Pa) at f Hz."""
    dashpot = 1j * 2 * np.pi * f * p.viscosity
    return dashpot * p.storage / (p.storage + dashpot)


MAXWELL = laws.Law(
    name="maxwell",
    equation="mu = i omega eta G / (G + i omega eta)",
    channels=lambda n_freq: 2,
    network=maxwell_network,
    parameters=Maxwell,
    modulus=maxwell_modulus,
    valid=lambda p: bool(np.all(np.asarray(p.storage) > 0) and np.all(np.asarray(p.viscosity) > 0)),
    requires="storage > 0 Pa and viscosity > 0 Pa s",
    min_frequencies=2,
)


@pytest.fixture
def maxwell():
    laws.register(MAXWELL)
    yield MAXWELL
    laws.unregister("maxwell")


def test_a_law_defined_elsewhere_reaches_config_spec_and_simulator(maxwell):
    cfg = Config(mu_model="maxwell")
    assert program(cfg, 2, 3, 1).mu_outputs == 2
    with pytest.raises(ConfigError, match="'maxwell' has 2 parameters .* needs 2 or more"):
        program(cfg, 2, 1, 1)
    # the simulator's modulus: a Maxwell target in a clinical-like case
    law, f = Maxwell(4e3, 2.0), 60.0
    omega = 2 * math.pi * f
    expected = 1j * omega * 2.0 * 4e3 / (4e3 + 1j * omega * 2.0)
    assert laws.modulus(law, f) == pytest.approx(expected, rel=1e-14)
    case = clinical.FAMILY["tune-voigt"]
    case = case._replace(targets=(case.targets[0]._replace(law=law),))
    clinical.check_case(case)
    centre = (np.asarray(case.targets[0].centre) * clinical.extent(case))[:, None]
    assert clinical.modulus(case, centre, f)[0] == pytest.approx(expected, rel=1e-14)
    with jax.enable_x64(True):  # its network gradient, as a shipped law's
        value = jnp.asarray([[0.3, -0.2]])
        grad = jnp.asarray([[[1.0, 0.0]], [[0.0, 1.0]]])
        _, got = maxwell.network(value, grad, jnp.asarray(RATIO))
        ref = jax.jacfwd(lambda v: maxwell.network(v[None], None, jnp.asarray(RATIO))[0][0])
        jac = ref(value[0])  # (F, 2) complex
    np.testing.assert_allclose(got[:, 0].T, jac, rtol=1e-12)
    with pytest.raises(ConfigError, match="mu_model must be one of"):
        Config(mu_model="zener")


def _voigt_like(law, f):
    """The Voigt solid with the modulus of ``law`` at ``f`` Hz: G' = Re mu, eta = Im mu / omega."""
    mu = laws.modulus(law, f)
    return laws.get("voigt").parameters(mu.real, mu.imag / (2 * np.pi * f))


def test_a_law_defined_elsewhere_reaches_both_simulators(maxwell):
    """A Maxwell medium solves, at each frequency, the system of the Voigt medium with the
    same mu there: the simulators read the law's modulus from the registry alone."""
    background, target, freqs = Maxwell(3e3, 20.0), Maxwell(6e3, 20.0), (60.0, 90.0)
    # the finite-difference phantom: the law's parameters as maps
    regions = np.ones((16, 16), int)
    regions[5:11, 5:11] = 2
    storage = np.where(regions == 2, target.storage, background.storage)
    phantom = phantoms.Phantom("maxwell", Maxwell(storage, 20.0), regions, 1e-3)
    assert phantom.law == "maxwell"
    # the elastic slab: a Maxwell background and inclusion, both frequencies in one run
    inclusion = elastic.Inclusion((0.5, 0.5), (4e-3, 4e-3), target)
    slab = dict(shape=(16, 16, 3), spacing=2e-3, mesh_size=8e-3, output="slice")
    solid = elastic.simulate_elastic([inclusion], frequencies=freqs, background=background, **slab)
    for i, f in enumerate(freqs):
        scalar = phantoms.simulate(phantom, [f], 1)  # one frequency: one absorbing layer
        mu = [laws.modulus(background, f), laws.modulus(target, f)]
        for data, k in ((scalar, 0), (solid, i)):
            np.testing.assert_array_equal(data.mu[k][data.regions == 1], mu[0])
            np.testing.assert_array_equal(data.mu[k][data.regions == 2], mu[1])
        same = dataclasses.replace(phantom, tissue=_voigt_like(phantom.tissue, f))
        np.testing.assert_allclose(phantoms.simulate(same, [f], 1).u, scalar.u, rtol=1e-6)
        voigt = elastic.simulate_elastic(
            [inclusion._replace(law=_voigt_like(target, f))],
            frequencies=[f],
            background=_voigt_like(background, f),
            **slab,
        )
        np.testing.assert_allclose(voigt.u[0], solid.u[i], rtol=1e-6)
    assert abs(mu[0].real / laws.modulus(background, freqs[0]).real - 1) > 0.05  # G' varies
