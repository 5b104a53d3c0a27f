"""A small elastic FEM phantom (data the PINN's own model did not produce) is recovered.

Fixture ``hp.example("elastic-two-ellipse-slice")`` (in ``helmholtz_pinn/examples/``): the
middle z-slice of
``elastic.simulate_elastic("two-ellipse", frequencies=(80.0, 100.0), shape=(30, 36, 5),
spacing=(2e-3, 2e-3, 2e-3))`` (3-D viscoelastic Navier-Cauchy by P2 finite elements, free
faces; 100 s to solve on 2 cores, hence stored): 30 x 36 voxels of 2 mm, three
components, a 6 kPa and a 1.5 kPa ellipse in 3 kPa.
"""

from helmholtz_pinn.assess import baselines, metrics
from helmholtz_pinn.config import Config
from helmholtz_pinn.fit import inversion
from helmholtz_pinn.io.dataset import example

CPU_FIT = Config(
    width=64, depth=2, mu_width=32, mu_depth=2, n_features=32, batch_size=1080,
    steps=1500, sync_interval=100, pde_warmup=300, learning_rate=3e-3, seed=0,
    mu_model="voigt",  # the phantom's law: one fit (auto fits two; tests/fit/test_joint.py)
)  # fmt: skip


def test_small_elastic_phantom_is_recovered_by_the_default_form():
    """pde="auto" (navier for three components), CPU-sized networks, 1500 steps; the
    u-network's Fourier factor left to the data (0.5: 2-D at 9.2 voxels per wavelength).

    Measured: median G' error 11.2 / 11.5 / 10.0 % (seeds 0 / 1 / 2); background, stiff
    and soft ellipse 11.1 / 9.3 / 16.4 % (seed 0); contrast transfer 100 % and 69 % (seed
    0), 96-100 % and 73-76 % (seeds 1, 2); smoothed AHI on the same file 17.3 %. With the
    former factor 1.0: 13.0 % (seed 0), 15.2 % (seed 2) and a worse minimum for seed 1
    (37 %). Bounds: median < 15 %, every region < 20 %, each contrast > 60 %, and better
    than smoothed AHI.
    """
    data = example("elastic-two-ellipse-slice")
    res = inversion.invert(data, CPU_FIT, devices=1, progress=False)
    assert res.metrics["pde"] == "navier"
    ev = metrics.evaluate(res.mu, data)
    assert ev["median_rel_error_storage"] < 0.15
    for region, stats in ev["regions"].items():
        assert stats["median_rel_error_storage"] < 0.20, region
    assert min(ev["contrast_transfer"].values()) > 0.60
    ahi = metrics.evaluate(baselines.ahi(data, smoothing="gaussian", sigma=1.0), data)
    assert ev["median_rel_error_storage"] < ahi["median_rel_error_storage"]
