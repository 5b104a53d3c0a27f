"""The fitted networks on a grid: u' and mu' at every voxel, in one compiled program."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from helmholtz_pinn import laws
from helmholtz_pinn.pinn import programs, scaling, train
from helmholtz_pinn.pinn.compile_options import once_options
from helmholtz_pinn.pinn.model import VALUE, apply_jet


def predict(
    state: train.TrainState,
    spec: train.Spec,
    x: np.ndarray,
    omega_ratio: np.ndarray,
    chunk: int = 65536,
) -> tuple[np.ndarray, np.ndarray]:
    """u' (N, F, C) and mu' (N, F) at points x (N, d), evaluated in equal pieces of at most
    ``chunk`` points (the last one padded), so one program is compiled per grid."""
    pieces = -(-len(x) // chunk)
    size = -(-len(x) // pieces)
    padded = np.concatenate([x, np.repeat(x[-1:], pieces * size - len(x), axis=0)])
    fn = _predict_fn(spec)
    parts = [
        fn(state.params, state.consts, jnp.asarray(padded[i : i + size]), jnp.asarray(omega_ratio))
        for i in range(0, len(padded), size)
    ]
    return tuple(np.concatenate([np.asarray(p[k]) for p in parts])[: len(x)] for k in (0, 1))


@programs.stored
def _predict_fn(spec: train.Spec):
    n_mu = laws.get(spec.mu_model).channels(spec.n_freq)

    def fn(params, consts, x, omega_ratio):
        u = apply_jet(params["u"], consts["u"], x, spec.activation, VALUE, spec.depth)[0]
        m = apply_jet(params["mu"], consts["mu"], x, spec.activation, VALUE, spec.mu_depth)[0]
        mu, _ = laws.get(spec.mu_model).network(m[..., :n_mu], None, omega_ratio)
        u = u[..., : 2 * spec.n_freq * spec.n_comp]
        return scaling.u_complex(u, spec.n_freq, spec.n_comp), mu

    return programs.Program(fn, compiler_options=once_options())
