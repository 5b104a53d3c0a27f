"""Same seed twice, different seed once: are the modulus maps identical on this device?

PYTHONPATH=. python scripts/determinism.py  -> one JSON line
"""

import json

import jax
import numpy as np

from helmholtz_pinn.fit import inversion
from helmholtz_pinn.forward import phantoms


def main() -> None:
    ds = phantoms.simulate_phantom("four-target", noise_db=-20)
    runs = [inversion.invert(ds, steps=2000, seed=s, progress=False).mu for s in (0, 0, 1)]
    same = np.abs(runs[0] - runs[1]).max() / np.abs(runs[0]).max()
    other = np.abs(runs[0] - runs[2]).max() / np.abs(runs[0]).max()
    print(
        json.dumps(
            {
                "device": str(jax.devices()[0]),
                "same_seed_bitwise": bool(same == 0),
                "same_seed_max_rel_diff": float(same),
                "other_seed_max_rel_diff": float(other),
            }
        )
    )


if __name__ == "__main__":
    main()
