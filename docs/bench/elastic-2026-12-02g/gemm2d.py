"""Prepared in the thirteenth session for the next one (not run): does a 2-D slice's first
fit meet the issue's 30 s with cuBLAS GEMMs? 2-D programs below model.CUBLAS_MIN_POINTS
(10 000 points) get XLA's Triton GEMMs, whose autotuning makes most of a slice's 41 s first
fit (11 s once the compilation cache holds it). 3-D programs already use cuBLAS: their
compile fell from 29.6 to 5.5 s at +2 % per step (docs/performance.md).

argv: mode (triton | cublas) file.npz. Two hp.invert calls of the file in this process, no
persistent cache: the first compiles, the second reuses the program. Prints one JSON line."""

import json
import sys
import time
import warnings

import numpy as np

import helmholtz_pinn as hp
from helmholtz_pinn import metrics, model

warnings.simplefilter("ignore")


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "cublas":
        model.CUBLAS_MIN_POINTS = 0
    data = hp.load(path)
    row = {"mode": mode, "file": path.split("/")[-1]}
    for name in ("first", "second"):
        t = time.perf_counter()
        r = hp.invert(data, progress=False)
        row[f"{name}_s"] = round(time.perf_counter() - t, 1)
        ev = metrics.evaluate(np.asarray(r.mu), data)
        row[f"{name}_median"] = round(ev["median_rel_error_storage"] * 100, 2)
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
