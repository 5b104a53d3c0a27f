"""helmholtz_pinn: physics-informed inversion of MR elastography wave fields.

Data flow: data -> phantoms -> model -> physics -> train -> metrics/baselines -> cli.

>>> import helmholtz_pinn as hp
>>> data = hp.simulate("four-target", noise_db=-20)   # or hp.load("scan.npz")
>>> result = hp.invert(data, steps=4000)             # result.mu: complex Pa
>>> result.save("out")
"""

from helmholtz_pinn.baselines import ahi as baseline
from helmholtz_pinn.batch import invert_many, invert_slicewise
from helmholtz_pinn.config import Config
from helmholtz_pinn.convert import convert
from helmholtz_pinn.data import Dataset, DatasetError, load, save
from helmholtz_pinn.inversion import Result, invert
from helmholtz_pinn.metrics import evaluate
from helmholtz_pinn.phantoms import PHANTOMS, make_phantom, simulate_phantom
from helmholtz_pinn.sharding import invert_parallel
from helmholtz_pinn.train import DivergenceError

simulate = simulate_phantom

__all__ = [
    "PHANTOMS",
    "Config",
    "Dataset",
    "DatasetError",
    "DivergenceError",
    "Result",
    "baseline",
    "convert",
    "evaluate",
    "invert",
    "invert_many",
    "invert_parallel",
    "invert_slicewise",
    "load",
    "make_phantom",
    "save",
    "simulate",
    "simulate_phantom",
]
__version__ = "0.1.0"
