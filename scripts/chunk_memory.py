"""Peak memory of a slicewise fit of S slices, in chunks or all at once (docs/reliability.md).

Each run is its own process (peak RSS, ``ru_maxrss``, is per process; on the CPU the
device memory is host memory, so it counts both):

    PYTHONPATH=. python scripts/chunk_memory.py                   # S = 20 and 200, chunks of 20
    PYTHONPATH=. python scripts/chunk_memory.py --slices 20 200 1000 --chunk 20

prints one JSON line per run: slices, chunk size, peak RSS (MiB), the input u and the
result's arrays (MiB: the part that must grow with S), wall time (s).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

SETTINGS = dict(width=64, depth=2, mu_width=32, mu_depth=1, n_features=32, batch_size=512)
SETTINGS.update(steps=20, sync_interval=10, pde_warmup=5, mu_ref=3000.0)


def volume(slices: int, n: int = 32):
    """``slices`` z-slices of n x n voxels of a plane wave (F = C = 1), each its own member."""
    import numpy as np

    from helmholtz_pinn.io.dataset import Dataset

    h, f = 1e-3, 100.0
    x, y = np.meshgrid(np.arange(n) * h, np.arange(n) * h, indexing="ij")
    g = np.linspace(2500.0, 3500.0, slices)
    k = np.sqrt(1000 * (2 * np.pi * f) ** 2 / g)
    u = np.exp(1j * k[None, None, :] * (0.8 * x + 0.6 * y)[..., None]).astype(np.complex64)
    return Dataset(u=u[None, None], frequency=np.array([f]), spacing=np.full(3, h))


def one(slices: int, chunk: int | None) -> dict:
    import warnings

    import numpy as np

    from helmholtz_pinn.fit.inversion import invert

    warnings.simplefilter("ignore")
    data = volume(slices)
    t0 = time.perf_counter()
    res = invert(
        data,
        slicewise=True,
        devices=1,
        progress=False,
        force=True,
        max_members_per_chunk=chunk,
        **SETTINGS,
    )
    wall = time.perf_counter() - t0
    kept = [res.mu, res.u_fit] + [np.asarray(a) for a in __import__("jax").tree.leaves(res.params)]
    return {
        "slices": slices,
        "chunk": chunk,
        "chunks": res.metrics.get("chunks", 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "input_u_mib": round(data.u.nbytes / 2**20, 2),
        "result_arrays_mib": round(sum(a.nbytes for a in kept) / 2**20, 2),
        "wall_s": round(wall, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slices", type=int, nargs="+", default=[20, 200])
    parser.add_argument("--chunk", type=int, default=20)
    parser.add_argument("--unchunked", action="store_true", help="also run each S at once")
    parser.add_argument("--child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        slices, chunk = args.child
        print(json.dumps(one(slices, chunk or None)))
        return
    for slices in args.slices:
        for chunk in [args.chunk] + ([0] if args.unchunked else []):
            cmd = [sys.executable, __file__, "--child", str(slices), str(chunk)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            print(out.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
