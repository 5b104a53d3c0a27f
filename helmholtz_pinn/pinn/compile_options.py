"""XLA compile options of the programs a fit compiles: which GEMMs (cuBLAS or Triton)
and whether XLA autotunes them, by what a program does and how often it runs. The
arithmetic is the same float32 (``Precision.HIGHEST``) whatever they say; on a CPU
there are none.

Beside the persistent compile cache in spirit (:mod:`helmholtz_pinn.fit.compile_cache`),
but in the network layer: the once-run programs of :mod:`helmholtz_pinn.pinn.train` and
:mod:`helmholtz_pinn.pinn.dispersion` are jitted with them there, and that layer may not
import ``fit``.
"""

from __future__ import annotations

import jax

# Programs whose GEMMs have this many points (rows per jet row) on get cuBLAS GEMMs instead
# of XLA's Triton GEMMs on a GPU (faster steps and shorter compiles for large batches,
# slower steps for small ones); 3-D programs get cuBLAS at every size (a compile several
# times shorter for a step a few per cent slower). The measurements: docs/performance.md.
CUBLAS_MIN_POINTS = 10000


def gemm_options(points: int, ndim: int = 2) -> dict:
    """XLA options of a program whose networks see ``points`` points (per device) in
    ``ndim`` dimensions: on a GPU, cuBLAS GEMMs (``xla_gpu_enable_triton_gemm=False``) from
    :data:`CUBLAS_MIN_POINTS` on, and for every 3-D program; none elsewhere. The
    arithmetic is the same float32 (``Precision.HIGHEST``)."""
    if jax.default_backend() == "gpu" and (points >= CUBLAS_MIN_POINTS or ndim >= 3):
        return {"xla_gpu_enable_triton_gemm": False}
    return {}


def phase_options() -> dict:
    """XLA options of a program run once per fit for seconds (the L-BFGS phase): on a GPU
    cuBLAS GEMMs at every size, autotuned among cuBLAS's algorithms (Triton's autotuning
    of its several loss evaluations took longer than the phase runs); none elsewhere. The
    arithmetic is the same float32 (``Precision.HIGHEST``)."""
    if jax.default_backend() == "gpu":
        return {"xla_gpu_enable_triton_gemm": False}
    return {}


def once_options() -> dict:
    """XLA options of a program run once per fit (the map on the grid, the law check): on
    a GPU cuBLAS GEMMs with XLA's heuristic algorithm, no autotuning (it took most of a
    first run's compile for a program that runs for milliseconds); none elsewhere. The
    arithmetic is the same float32 (``Precision.HIGHEST``)."""
    if jax.default_backend() == "gpu":
        return {"xla_gpu_enable_triton_gemm": False, "xla_gpu_autotune_level": 0}
    return {}
