"""The notebooks run top to bottom (shrunken by HELMHOLTZ_PINN_SMOKE=1), show their
figures inline and are stored without outputs."""

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT_S = 300
# inline figures (image/png outputs) each notebook shows: 01 wave, methods, modulus, loss;
# 02 wave with mask, modulus; 03 the middle slice's moduli beside the truth and their
# errors, and the wave field of each of the three components
FIGURES = {"01_quickstart.ipynb": 4, "02_your_data.ipynb": 4, "03_scanner_volume.ipynb": 4}


def test_the_notebooks_exist():
    names = [p.name for p in NOTEBOOKS]
    assert sorted(FIGURES) == names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_without_outputs(path):
    nb = json.loads(path.read_text())
    dirty = [
        i
        for i, cell in enumerate(nb["cells"])
        if cell["cell_type"] == "code" and (cell.get("outputs") or cell.get("execution_count"))
    ]
    assert not dirty, (
        f"{path.name}: cells {dirty} hold outputs; clear them before committing "
        f"(jupyter nbconvert --clear-output --inplace {path.relative_to(ROOT)})"
    )


@pytest.mark.timeout(600)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")

    nb = nbformat.read(path, as_version=4)
    env = {
        **os.environ,
        "HELMHOLTZ_PINN_SMOKE": "1",
        "MPLBACKEND": "Agg",
        "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu"),
        # the package importable from the checkout even when it is not pip-installed
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    client = nbclient.NotebookClient(
        nb,
        kernel_name="python3",  # the kernel of the running interpreter (this venv)
        timeout=CELL_TIMEOUT_S,
        resources={"metadata": {"path": str(tmp_path)}},  # the notebook's working folder
    )
    try:
        client.execute(env=env)
    except nbclient.exceptions.CellExecutionError as err:  # names the cell and traceback
        pytest.fail(f"{path.name} failed:\n{err}", pytrace=False)
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    figures = sum("image/png" in o.get("data", {}) for o in outputs)
    assert figures == FIGURES[path.name], f"{path.name}: {figures} inline figures shown"
