"""Large batches in chunks: a slicewise volume fitted two slices at a time equals the
fit of all slices at once (to float32 rounding), a resume skips the finished chunks and
ends bit for bit where the uninterrupted chunked run did; the chunk size follows from a
memory estimate (known answer) or from Config / --max-members-per-chunk."""

import shutil

import numpy as np
import pytest
from settings import SMALL, plane_wave_slices

from helmholtz_pinn.cli.parser import config_from, parse_args
from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import ConfigError
from helmholtz_pinn.fit import checkpoints, memory
from helmholtz_pinn.fit.inversion import invert
from helmholtz_pinn.fit.plan import program

CFG = Config(**{**SMALL, "checkpoint_every": 1})
RUN = dict(progress=False, devices=1, slicewise=True, force=True)
pytestmark = pytest.mark.filterwarnings(
    "ignore::helmholtz_pinn.assess.fit_checks.FitQualityWarning"
)


@pytest.fixture(scope="module", autouse=True)
def every_block():
    """These tests need the checkpoints of every block: no interval between them."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(checkpoints, "MIN_INTERVAL_S", 0.0)
        yield


@pytest.fixture(scope="module")
def volume():
    """Three different z-slices: chunks of 2 and of 1 (padded to 2)."""
    return plane_wave_slices(n=12)  # the grid of test_checkpoint: its compiled 3-member fit


@pytest.fixture(scope="module")
def chunked(volume, tmp_path_factory):
    folder = tmp_path_factory.mktemp("chunked") / "checkpoints"
    res = invert(volume, CFG, checkpoint_dir=folder, max_members_per_chunk=2, **RUN)
    return folder, res


def test_chunks_equal_the_fit_of_all_slices_at_once(volume, chunked):
    folder, res = chunked
    facts = res.metrics
    assert (facts["chunks"], facts["datasets_per_chunk"], facts["steps"]) == (2, 2, 10)
    assert sorted(p.name for p in folder.iterdir()) == ["chunk-000", "chunk-001", "chunks.json"]
    assert len(res.history) == 2 and len(res.history[-1]["loss"]) == 3  # one per slice
    whole = invert(volume, CFG, **RUN)
    assert "chunks" not in whole.metrics
    # members vmapped 2 vs 3 at a time: other float32 summation order, same fit
    np.testing.assert_allclose(res.mu, whole.mu, rtol=1e-5)
    assert not np.array_equal(res.mu[..., 0], res.mu[..., 1])  # slices kept apart


def test_resume_skips_finished_chunks_and_ends_bitwise(volume, chunked, tmp_path):
    """As if killed in chunk 1 after its step-5 checkpoint: chunk 0 is restored finished
    (no block trained), chunk 1 continues from step 5."""
    folder = shutil.copytree(chunked[0], tmp_path / "checkpoints")
    shutil.rmtree(folder / "chunk-001" / "10")
    seen = []  # members per block the callback sees
    res = invert(
        volume,
        CFG,
        checkpoint_dir=folder,
        resume="strict",
        max_members_per_chunk=2,
        callback=lambda record: seen.append(len(record["loss"])),
        **RUN,
    )
    assert seen == [1]  # chunk 0 trains no block; chunk 1's padding copy is not shown
    facts = res.metrics
    assert (facts["resumed_from_step"], facts["chunks_already_done"]) == (5, 1)
    where = folder.absolute() / "chunk-001" / "5"
    assert (
        f"resumed from step 5 of 10 ({where}); 1 of 2 chunks were finished already"
        in (facts["notes"])
    )
    np.testing.assert_array_equal(res.mu, chunked[1].mu)


def test_chunk_size_from_the_memory_estimate(monkeypatch):
    spec = program(Config(**SMALL), 2, 2, 2)
    per_voxel = memory.bytes_per_voxel(2, 2, 2)
    one = memory.member_bytes(spec, 1000)
    assert memory.member_bytes(spec, 3000) - one == 2000 * per_voxel  # batch 64 < rows
    monkeypatch.setattr(memory, "free_device_memory", lambda device=None: 10 * one / 0.9 + 1)
    assert memory.members_per_chunk(spec, 1000, n_devices=4) == 40  # 10 per device
    monkeypatch.setattr(memory, "free_device_memory", lambda device=None: 1)
    assert memory.members_per_chunk(spec, 1000) == 1  # at least one


def test_chunk_size_from_the_command_line():
    args = parse_args(["invert", "x.npz", "--max-members-per-chunk", "20"])
    assert config_from(args).max_members_per_chunk == 20
    with pytest.raises(ConfigError, match="max_members_per_chunk must be a positive integer"):
        Config(max_members_per_chunk=0)
