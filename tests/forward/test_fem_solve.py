"""The sparse solves behind the elastic phantoms: the mixed-precision solve (complex64
factors, complex128 refinement) equals the double one on a real FE system, and refuses
a system too ill-conditioned for float32 factors instead of returning a wrong answer."""

import numpy as np
import pytest
from scipy import sparse

from helmholtz_pinn.forward import elastic, fem_solve


def test_mixed_precision_equals_double_on_an_elastic_fe_system():
    """A 6 mm box of 3 kPa, eta 1 Pa s, lambda 1 MPa at 100 Hz (P2, 2 mm cubes), one face
    driven: the two solutions agree to the refinement tolerance."""
    mesh = elastic.box_mesh((6e-3, 6e-3, 6e-3), 2e-3)
    ops = elastic.assemble(
        mesh, lambda x: np.full(x.shape[1:], 3e3), lambda x: np.ones(x.shape[1:]), 1e6, 1e3
    )
    dofs = ops.basis.get_dofs(lambda x: np.isclose(x[1], 0.0)).flatten()
    values = np.where(elastic.component_of_dofs(ops.basis)[dofs] == 0, 1.0, 0.0)
    double = elastic.solve(ops, 2 * np.pi * 100, dofs, values)
    mixed = elastic.solve(ops, 2 * np.pi * 100, dofs, values, precision="mixed")
    assert np.abs(double).max() > 0.5
    assert np.linalg.norm(mixed - double) <= 1e-8 * np.linalg.norm(double)


def test_mixed_precision_refuses_an_ill_conditioned_system_and_double_solves_it(rng):
    """cond(A) = 1e12, far past 1 / float32 rounding: the refinement cannot converge."""
    q, _ = np.linalg.qr(rng.standard_normal((40, 40)))
    a = sparse.csc_matrix((q * np.logspace(0, -12, 40)) @ q.T + 0j)
    b = a @ (rng.standard_normal(40) + 0j)
    with pytest.raises(ValueError, match="precision='double'"):
        fem_solve.solve(a, b, "mixed")
    x = fem_solve.solve(a, b, "double")
    assert np.linalg.norm(a @ x - b) <= 1e-6 * np.linalg.norm(b)


def test_an_unknown_precision_is_named():
    with pytest.raises(ValueError, match="'single'"):
        fem_solve.solve(sparse.identity(2, format="csc", dtype=complex), np.ones(2), "single")
