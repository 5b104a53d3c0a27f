"""One fit that stops Adam at the noise level (the discrepancy principle, by ``invert``'s
``callback``): after the PDE warm-up (step 1000), the first block whose mean data loss is
at most (tau n)^2, n the best field's noise fraction (one field: the data loss of a fit
that leaves exactly the noise is n^2). One JSON line as fit_members.py writes it, the
overrides' ``tau`` added. From the repository root, with PYTHONPATH=.:scripts:

    python docs/records/sweep/cpu-noisy/stop_at_noise.py NAME TAU JSON TAG OUT [DATA]
"""

import json
import sys
import time
import warnings
from pathlib import Path

import fit_members  # beside this script

import helmholtz_pinn as hp
from helmholtz_pinn.pinn import problem


def main() -> None:
    name, tau, overrides, tag, out = sys.argv[1:6]
    tau, overrides = float(tau), json.loads(overrides)
    folder = Path(sys.argv[6] if len(sys.argv) > 6 else "data/sweep")
    data = hp.load(folder / f"{name}.npz")
    target = (tau * problem.best_noise(data)) ** 2

    def at_noise(record: dict) -> bool:
        return record["step"] >= 1000 and record["data"] <= target

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = hp.invert(data, progress=False, callback=at_noise, **overrides)
    seconds = time.perf_counter() - t0
    split = name.split("-")[0]
    row = fit_members.row(name, split, tag, {**overrides, "tau": tau}, seconds, res, data)
    with open(out, "a") as sink:
        sink.write(json.dumps(row, default=str) + "\n")
    print(name, tau, overrides, "G'", round(row["storage"], 3), "steps", row["steps"])


if __name__ == "__main__":
    main()
