"""The named clinical-like cases (:data:`FAMILY`): tuning and held-out members.

Units as in :mod:`helmholtz_pinn.forward.clinical.case`; each region's tissue is a law's
parameters (:mod:`helmholtz_pinn.laws`).

The ``tune-*`` members (for choosing defaults) and the
``heldout-*`` members (for reporting accuracy only) differ in every respect a default could
be fitted to: target positions, sizes and shapes; background laws (springpot alpha
0.15-0.3, mu_0 2.5-3.5 kPa; Voigt 2.2-3 kPa, 1-2 Pa s) and target laws (1.4-8 kPa, alpha
0.15-0.4, eta 1-5 Pa s); voxel size (tune 1.5, 2.5, 3 mm;
held-out 2, 1.5, 2.5 mm); organ shape seed, drivers (faces, phases), gradient direction,
frequencies and noise seed. Each split has a Voigt-tissue member and a single-frequency
member; ``heldout-reference`` is a 64 x 64 x 32 mm block at 2 mm voxels in springpot tissue
``mu = 2.5 kPa (i omega / omega_0)^0.25`` with a stiff 16 mm sphere, a softer 14 mm sphere, a
stiff 8 mm sphere, an ellipsoid differing mostly in alpha, a background gradient, an
ellipsoidal organ and two phased drivers, at 30, 40 and 50 Hz.
"""

from __future__ import annotations

import math

from helmholtz_pinn import laws
from helmholtz_pinn.forward.clinical.case import ClinicalCase, Driver, Organ, Target, sphere
from helmholtz_pinn.laws.springpot import Springpot, from_storage
from helmholtz_pinn.laws.voigt import Voigt

MM = 1e-3
_REFERENCE_BACKGROUND = Springpot(2.5e3, 0.25)


def _storage_at_reference(law: Springpot) -> float:
    """``G'`` (Pa) of ``law`` at its reference frequency."""
    return laws.modulus(law, law.reference_frequency).real


FAMILY: dict[str, ClinicalCase] = {
    "tune-springpot": ClinicalCase(
        description="springpot tissue (3 kPa, alpha 0.2), y gradient, stiff sphere, soft "
        "rotated ellipsoid, a more viscous sphere (alpha 0.4); 2.5 mm voxels, 30/45/60 Hz",
        shape=(26, 26, 13),
        spacing=2.5 * MM,
        frequencies=(30.0, 45.0, 60.0),
        background=Springpot(3.0e3, 0.2),
        targets=(
            sphere((0.33, 0.62, 0.5), 7 * MM, Springpot(6.5e3, 0.2)),
            Target(
                "ellipsoid",
                (0.64, 0.36, 0.5),
                (9 * MM, 5 * MM, 5 * MM),
                Springpot(1.8e3, 0.25),
                (0.0, 0.0, 0.6),
            ),
            sphere(
                (0.64, 0.67, 0.45),
                5 * MM,
                from_storage(_storage_at_reference(Springpot(3.0e3, 0.2)), 0.4),
            ),
        ),
        organ=Organ((27.5 * MM, 27 * MM, 12.5 * MM), roughness=0.08, seed=11),
        drivers=(
            Driver("y0", (0.4, 0.5), 10 * MM, (1.0, 0.2, 0.3)),
            Driver("x0", (0.6, 0.5), 8 * MM, (0.3, 1.0, 0.2), 1.2),
        ),
        gradient=(0.0, 0.4, 0.0),
        seed=101,
    ),
    "tune-voigt": ClinicalCase(
        description="Voigt tissue (2.2 kPa, 2 Pa s), xy gradient, soft sphere, stiff tilted "
        "ellipsoid, a more viscous sphere (5 Pa s); 1.5 mm voxels, 40/50/60 Hz",
        shape=(42, 42, 21),
        spacing=1.5 * MM,
        frequencies=(40.0, 50.0, 60.0),
        background=Voigt(2.2e3, 2.0),
        targets=(
            sphere((0.35, 0.4, 0.5), 6 * MM, Voigt(1.4e3, 1.5)),
            Target(
                "ellipsoid",
                (0.62, 0.6, 0.5),
                (11 * MM, 6 * MM, 5 * MM),
                Voigt(5e3, 3.0),
                (0.3, 0.0, -0.5),
            ),
            sphere((0.36, 0.7, 0.5), 4.5 * MM, Voigt(2.2e3, 5.0)),
        ),
        organ=Organ((28 * MM, 28 * MM, 13 * MM), roughness=0.07, seed=12),
        drivers=(
            Driver("x1", (0.45, 0.5), 9 * MM, (0.2, 1.0, 0.3)),
            Driver("y1", (0.55, 0.5), 9 * MM, (1.0, 0.2, 0.3), -0.8),
        ),
        gradient=(0.3, 0.3, 0.0),
        seed=102,
    ),
    "tune-single": ClinicalCase(
        description="springpot tissue (3.5 kPa, alpha 0.3), diagonal gradient, stiff and soft "
        "spheres, a less viscous ellipsoid (alpha 0.15); 3 mm voxels, 50 Hz only",
        shape=(22, 22, 11),
        spacing=3 * MM,
        frequencies=(50.0,),
        background=Springpot(3.5e3, 0.3),
        targets=(
            sphere((0.32, 0.33, 0.5), 9 * MM, Springpot(8e3, 0.3)),
            sphere((0.7, 0.35, 0.5), 5 * MM, Springpot(2.0e3, 0.3)),
            Target(
                "ellipsoid",
                (0.5, 0.7, 0.5),
                (12 * MM, 5 * MM, 6 * MM),
                from_storage(_storage_at_reference(Springpot(3.5e3, 0.3)), 0.15),
                (0.0, 0.4, 0.3),
            ),
        ),
        organ=Organ((28 * MM, 28 * MM, 12 * MM), roughness=0.06, seed=13),
        drivers=(
            Driver("z1", (0.5, 0.5), 12 * MM, (1.0, 0.5, 0.1)),
            Driver("y0", (0.5, 0.5), 8 * MM, (0.2, 0.3, 1.0), 2.0),
        ),
        gradient=(0.2, -0.2, 0.0),
        seed=103,
    ),
    "heldout-reference": ClinicalCase(
        description="64 x 64 x 32 mm at 2 mm, springpot tissue 2.5 kPa (i omega/omega_0)^0.25, "
        "x gradient +-20 %, stiff 16 mm, softer 14 mm and stiff 8 mm spheres, an ellipsoid "
        "of alpha 0.4 at the background's G', two phased drivers; 30/40/50 Hz",
        shape=(32, 32, 16),
        spacing=2 * MM,
        frequencies=(30.0, 40.0, 50.0),
        background=_REFERENCE_BACKGROUND,
        targets=(
            sphere((0.3, 0.35, 0.5), 8 * MM, Springpot(5.5e3, 0.25)),
            sphere((0.7, 0.3, 0.5), 7 * MM, Springpot(1.5e3, 0.25)),
            sphere((0.32, 0.7, 0.5), 4 * MM, Springpot(6e3, 0.25)),
            Target(
                "ellipsoid",
                (0.68, 0.68, 0.5),
                (10 * MM, 6 * MM, 5 * MM),
                from_storage(_storage_at_reference(_REFERENCE_BACKGROUND), 0.4),
                (0.0, 0.0, math.pi / 6),
            ),
        ),
        organ=Organ((28 * MM, 28 * MM, 13 * MM), roughness=0.07, seed=7),
        drivers=(
            Driver("y0", (0.5, 0.5), 10 * MM, (1.0, 0.3, 0.2)),
            Driver("x1", (0.5, 0.5), 8 * MM, (0.2, 1.0, 0.4), math.pi / 2),
        ),
        gradient=(0.4, 0.0, 0.0),
        seed=201,
    ),
    "heldout-voigt": ClinicalCase(
        description="Voigt tissue (3 kPa, 1 Pa s), yz gradient, stiff tilted ellipsoid, soft "
        "sphere, a more viscous sphere (4 Pa s); 1.5 mm voxels, 35/50/65 Hz",
        shape=(42, 42, 21),
        spacing=1.5 * MM,
        frequencies=(35.0, 50.0, 65.0),
        background=Voigt(3.0e3, 1.0),
        targets=(
            Target(
                "ellipsoid",
                (0.4, 0.6, 0.5),
                (8 * MM, 12 * MM, 6 * MM),
                Voigt(7e3, 2.0),
                (0.5, 0.0, 0.8),
            ),
            sphere((0.65, 0.35, 0.5), 5 * MM, Voigt(1.6e3, 1.0)),
            sphere((0.68, 0.66, 0.5), 6 * MM, Voigt(3.0e3, 4.0)),
        ),
        organ=Organ((27.5 * MM, 27.5 * MM, 13 * MM), roughness=0.08, seed=21),
        drivers=(
            Driver("x0", (0.5, 0.5), 10 * MM, (1.0, 0.2, 0.2)),
            Driver("z1", (0.6, 0.4), 8 * MM, (0.3, 0.3, 1.0), -1.0),
        ),
        gradient=(0.0, -0.3, 0.2),
        seed=202,
    ),
    "heldout-single": ClinicalCase(
        description="springpot tissue (2.8 kPa, alpha 0.15), xyz gradient, stiff ellipsoid, "
        "soft sphere, a more viscous sphere (alpha 0.35); 2.5 mm voxels, 60 Hz only",
        shape=(26, 26, 13),
        spacing=2.5 * MM,
        frequencies=(60.0,),
        background=Springpot(2.8e3, 0.15),
        targets=(
            Target(
                "ellipsoid",
                (0.35, 0.62, 0.5),
                (11 * MM, 7 * MM, 6 * MM),
                Springpot(7e3, 0.15),
                (0.0, 0.3, -0.7),
            ),
            sphere((0.66, 0.36, 0.5), 6 * MM, Springpot(1.6e3, 0.2)),
            sphere(
                (0.36, 0.34, 0.5),
                5 * MM,
                from_storage(_storage_at_reference(Springpot(2.8e3, 0.15)), 0.35),
            ),
        ),
        organ=Organ((28 * MM, 28 * MM, 12.5 * MM), roughness=0.06, seed=22),
        drivers=(
            Driver("y1", (0.5, 0.5), 10 * MM, (1.0, 0.3, 0.3)),
            Driver("z0", (0.4, 0.6), 9 * MM, (0.3, 1.0, 0.3), 2.5),
        ),
        gradient=(-0.2, 0.2, 0.2),
        seed=203,
    ),
}
