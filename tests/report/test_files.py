"""Result files are written beside and moved in whole: a write that fails half-way (a full
disk) leaves the earlier result intact, with no partial file and no stage left behind."""

import errno

import numpy as np
import pytest
from settings import plane_wave_dataset

from helmholtz_pinn.errors import OutputError
from helmholtz_pinn.report import figures, files
from helmholtz_pinn.report.result import baseline_result


@pytest.fixture(scope="module")
def results():
    data = plane_wave_dataset(n=12)
    return baseline_result(data, "ahi"), baseline_result(data, "ahi", smoothing="gaussian")


def test_a_full_disk_half_way_leaves_the_earlier_result_whole(results, tmp_path, monkeypatch):
    first, second = results
    first.save(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    assert {"mu.npz", "metrics.json", "config.json", "modulus.png"} <= set(before)

    def full(*args, **kwargs):  # the figures come after mu.npz and metrics.json
        raise OSError(errno.ENOSPC, "No space left on device", "modulus.png")

    monkeypatch.setattr(figures, "save_all", full)
    with pytest.raises(OutputError, match="No space left on device"):
        second.save(tmp_path)
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    assert after == before and not (tmp_path / files.STAGE).exists()


def test_a_new_result_replaces_every_file_of_the_old_one(results, tmp_path):
    first, second = results
    first.save(tmp_path)
    (tmp_path / "notes.txt").write_text("the user's own file")
    second.save(tmp_path)
    with np.load(tmp_path / "mu.npz") as saved:
        np.testing.assert_array_equal(saved["mu"], second.mu)
    assert (tmp_path / "notes.txt").read_text() == "the user's own file"
    assert not (tmp_path / files.STAGE).exists()
