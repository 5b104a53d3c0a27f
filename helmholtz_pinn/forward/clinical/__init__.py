"""Clinical-like 3-D phantoms: an irregular organ with targets in a viscoelastic body.

The medium, the equation and its discretisation are those of
:mod:`helmholtz_pinn.forward.elastic` (time-harmonic Navier-Cauchy on P2 tetrahedra, time
convention ``Re(u exp(i omega t))``, lengths in m), with a complex shear modulus that
follows a viscoelastic law per region (:mod:`helmholtz_pinn.laws`: the region's law
parameters in SI units give ``mu_r(f)``). The background's modulus is scaled by a linear
gradient ``s(x) = 1 + sum_k g_k (x_k / L_k - 1/2)`` (``g_k`` the relative change across
the box along axis k); targets (spheres and rotated ellipsoids, later ones win) are
uniform. Since ``mu(x, f) = sum_r s_r(x) chi_r(x) mu_r(f)`` over the regions r, the
stiffness of every frequency is a combination of real matrices assembled once
(:func:`assemble`):

    A_f = sum_r mu_r(f) K[s_r chi_r] + K[lambda] - omega^2 M + i omega C_f
        = K[G'_f] + i K[G''_f] + K[lambda] - omega^2 M + i omega C_f,

``C_f`` the dashpot of :func:`elastic.dashpot` with ``G'_f`` on every boundary facet (waves
leave the box as into surrounding tissue). Drivers are discs on the box faces where
``u = amplitude exp(i phase)`` (Dirichlet). The mesh edge is the shortest shear
wavelength ``sqrt(|mu| / rho) / f`` over regions and frequencies over
``elements_per_wavelength`` (8), coarsened to stay within ``max_dofs`` (:data:`MAX_DOFS`, so
that a CPU's sparse LU takes seconds, not minutes, per frequency; the members then have 5-7
P2 elements, 10-14 nodes, per shortest wavelength). The organ is an ellipsoid whose radius
is perturbed by a seeded polynomial of the direction of degree <= 3 (low-order angular
harmonics); the tissue around it (background law) is simulated too, but the data hold
``u`` only inside the organ: :func:`simulate_clinical` passes NaN outside it to
:class:`Dataset`, which stores those voxels as 0 with ``mask`` False there (the
convention for scanner data with a NaN background).

Modules: :mod:`.case` (a case and its checks), :mod:`.geometry` (regions, organ, true
modulus), :mod:`.assembly` (mesh, matrices, drivers), :mod:`.simulation`
(:func:`simulate_clinical`), :mod:`.family` (:data:`FAMILY`, the named cases).
"""

from helmholtz_pinn.forward.clinical.assembly import (
    Operators,
    assemble,
    driver_dofs,
    mesh_size,
    system_matrix,
)
from helmholtz_pinn.forward.clinical.case import (
    FACES,
    MAX_DOFS,
    ClinicalCase,
    Driver,
    Organ,
    Target,
    check_case,
    extent,
    sphere,
)
from helmholtz_pinn.forward.clinical.family import FAMILY
from helmholtz_pinn.forward.clinical.geometry import (
    background_scale,
    modulus,
    organ_mask,
    region_labels,
    region_laws,
)
from helmholtz_pinn.forward.clinical.simulation import simulate_clinical

__all__ = [
    "FACES", "FAMILY", "MAX_DOFS", "ClinicalCase", "Driver", "Operators", "Organ", "Target",
    "assemble", "background_scale", "check_case", "driver_dofs", "extent", "mesh_size",
    "modulus", "organ_mask", "region_labels", "region_laws", "simulate_clinical", "sphere",
    "system_matrix",
]  # fmt: skip
