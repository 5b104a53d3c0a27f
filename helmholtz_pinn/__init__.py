"""helmholtz_pinn: physics-informed inversion of MR elastography wave fields.

Data flow: data -> phantoms -> model -> physics -> train -> metrics/baselines -> cli.
"""

from helmholtz_pinn.config import Config
from helmholtz_pinn.data import Dataset, DatasetError, load, save
from helmholtz_pinn.inversion import Result, invert
from helmholtz_pinn.train import DivergenceError

__all__ = ["Config", "Dataset", "DatasetError", "DivergenceError", "Result", "invert", "load",
           "save"]
__version__ = "0.1.0"
