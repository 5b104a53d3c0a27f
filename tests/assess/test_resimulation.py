"""The re-simulation solver: second-order convergence to an analytic plane wave (2-D with
anisotropic voxels, 3-D) and to the forward model's heterogeneous field; its boxes
partition a volume's interior."""

import numpy as np
import pytest

from helmholtz_pinn.assess import resimulation
from helmholtz_pinn.forward import scalar_fd
from helmholtz_pinn.io.dataset import Dataset

RHO, F, MU = 1000.0, 60.0, 3000.0 + 400.0j
K = 2 * np.pi * F * np.sqrt(RHO / MU)  # complex wavenumber, rad/m


def plane_wave(n: int, aspect: tuple[float, ...], direction: tuple[float, ...]) -> Dataset:
    """exp(i k d.x) on a box 40 mm along x sampled by n voxels along x (other axes
    ``aspect`` times as long, the same voxel count per mm times ``aspect``)."""
    h = [0.04 / (n - 1) * a for a in aspect]
    counts = [n] + [int(round(n * 0.6))] * (len(aspect) - 1)
    x = np.meshgrid(*[np.arange(c) * hk for c, hk in zip(counts, h, strict=True)], indexing="ij")
    d = np.asarray(direction) / np.linalg.norm(direction)
    u = np.exp(1j * K * sum(di * xi for di, xi in zip(d, x, strict=True)))
    return Dataset(
        u=u[None, None], frequency=np.array([F]), spacing=np.array(h), mask=np.ones(u.shape, bool)
    )


def order(errors: list[float]) -> float:
    return float(np.log2(errors[0] / errors[1]))


@pytest.mark.parametrize(
    "aspect,direction,sizes",
    [((1.0, 1.5), (0.8, 0.6), (24, 48)), ((1.0, 1.0, 1.2), (0.6, 0.64, 0.48), (12, 24))],
)
def test_a_plane_wave_is_reproduced_to_second_order(aspect, direction, sizes):
    errors = []
    for n in sizes:
        data = plane_wave(n, aspect, direction)
        errors.append(float(resimulation.misfit(np.full(data.grid, MU), data)[0]))
    assert errors[1] < 0.01
    assert 1.8 < order(errors) < 2.4


def test_the_forward_models_heterogeneous_field_is_reproduced_to_second_order():
    """A stiff Gaussian bump (3 -> 6 kPa) in a wave entering through the boundary: the
    library's forward model (forward.scalar_fd, another second-order stencil) and the
    re-simulation approach each other as h^2."""
    diffs = []
    for n in (33, 65):
        h = 0.04 / (n - 1)
        x, y = np.meshgrid(np.arange(n) * h, np.arange(n) * h, indexing="ij")
        mu = MU + 3000.0 * np.exp(-((x - 0.02) ** 2 + (y - 0.022) ** 2) / (2 * 0.005**2))
        ring = np.exp(1j * K * (0.8 * x + 0.6 * y))
        u = scalar_fd.solve_helmholtz(mu, RHO, 2 * np.pi * F, h, dirichlet=ring)
        sim = resimulation.resimulate(mu, u[None, None], np.ones((n, n), bool), [F], [h, h], RHO)
        diffs.append(float(np.abs(sim[0, 0] - u).max() / np.abs(u).max()))
    assert diffs[1] < 0.02
    assert 1.7 < order(diffs) < 2.5


def test_a_map_off_by_30_percent_misses_the_wave_and_the_unit_of_u_does_not_matter():
    data = plane_wave(40, (1.0, 1.0), (0.8, 0.6))
    right = resimulation.misfit(np.full(data.grid, MU), data)[0]
    low = resimulation.misfit(np.full(data.grid, 0.7 * MU), data)[0]
    assert right < 0.01 < 0.2 < low
    tiny = Dataset(u=data.u * 1e-30, frequency=data.frequency, spacing=data.spacing)
    assert resimulation.misfit(np.full(data.grid, 0.7 * MU), tiny)[0] == pytest.approx(low)


@pytest.mark.parametrize("grid", [(80, 100, 10), (64, 64, 48), (9, 5, 3)])
def test_the_boxes_interiors_partition_the_interior(grid):
    boxes = resimulation.tiles(grid, resimulation.TILE)
    count = np.zeros(grid, int)
    for box in boxes:
        assert np.prod([s.stop - s.start for s in box]) <= max(resimulation.TILE, 27)
        count[box] += resimulation.interior(np.ones([s.stop - s.start for s in box], bool))
    assert np.array_equal(count, resimulation.interior(np.ones(grid, bool)).astype(int))


def test_a_map_without_a_finite_value_gives_no_misfit_and_no_error():
    data = plane_wave(12, (1.0, 1.0), (0.8, 0.6))
    assert np.isnan(resimulation.misfit(np.full(data.grid, np.nan + 0j), data)).all()
    holes = np.full(data.grid, MU)
    holes[3:5, 3:5] = np.nan  # filled by the map's median, here MU itself
    assert resimulation.misfit(holes, data)[0] == pytest.approx(
        resimulation.misfit(np.full(data.grid, MU), data)[0]
    )


def test_the_boxes_solved_at_once_give_the_misfit_of_one_at_a_time(monkeypatch):
    """The boxes are solved on several threads and summed in their order: the misfit is
    bit for bit that of one thread, and the boxes really are several."""
    data = plane_wave(12, (1.0, 1.0, 1.2), (0.6, 0.64, 0.48))
    rng = np.random.default_rng(0)
    mu = MU * (1 + 0.2 * rng.standard_normal(data.grid))
    monkeypatch.setattr(resimulation, "TILE", 150)
    assert len(resimulation.tiles(data.grid, 150)) >= 4
    monkeypatch.setattr(resimulation.os, "cpu_count", lambda: 4)
    together = resimulation.misfit(mu, data)
    monkeypatch.setattr(resimulation.os, "cpu_count", lambda: 1)
    assert np.array_equal(resimulation.misfit(mu, data), together)
