"""Clinical quantities (G', G'', |G*|, phi, c, a) against hand values and the plane-wave
definition; their medians in metrics.json; the NIfTI maps of Result.save(nifti=True)."""

import json
import math
import sys

import nibabel as nib
import numpy as np
import pytest
from settings import plane_wave_dataset

from helmholtz_pinn.assess import clinical
from helmholtz_pinn.errors import MissingDependencyError
from helmholtz_pinn.io.convert import convert, grid_affine
from helmholtz_pinn.io.dataset import Dataset, load, save
from helmholtz_pinn.report import files
from helmholtz_pinn.report.result import Result, make_result


def test_voigt_3_4_5_by_hand():
    """G' = 3 kPa, G'' = 4 kPa (Voigt eta = 4000 / (2 pi 50) Pa s at 50 Hz), rho = 1000:
    |G*| = 5 kPa, c = sqrt(2 * 25e6 / (1000 * 8000)) = 2.5 m/s,
    a = sqrt(2 * 25e6 / (1000 * 2000)) = 5 m/s, depth = 5 / (2 pi 50) m."""
    eta = 4000 / (2 * np.pi * 50)
    q = clinical.quantities(np.array([3000 + 1j * 2 * np.pi * 50 * eta]), 1000.0, 50.0)
    assert q["storage"][0] == pytest.approx(3000) and q["loss"][0] == pytest.approx(4000)
    assert q["magnitude"][0] == pytest.approx(5000)
    assert q["phase"][0] == pytest.approx(math.atan(4 / 3))
    assert q["speed"][0] == pytest.approx(2.5)
    assert q["penetration"][0] == pytest.approx(5.0)
    assert q["depth"][0] == pytest.approx(5 / (2 * np.pi * 50))


def test_limits_elastic_viscous_and_zero():
    q = clinical.quantities(np.array([3000.0 + 0j, 1j * 2000.0, 0j]), 1000.0)
    assert q["speed"][0] == pytest.approx(math.sqrt(3.0))  # sqrt(G'/rho)
    assert q["penetration"][0] == math.inf and q["phase"][0] == 0.0
    assert q["phase"][1] == pytest.approx(np.pi / 2)  # purely viscous: c = a = sqrt(2|G|/rho)
    assert q["speed"][1] == pytest.approx(2.0) and q["penetration"][1] == pytest.approx(2.0)
    assert q["speed"][2] == 0.0 and math.isnan(q["penetration"][2])
    assert "depth" not in q
    # a tiny loss modulus: no cancellation in |G*| - G'; a ~ 2 G' / (G'' sqrt(rho / G'))
    tiny = clinical.quantities(np.array([3000.0 + 1e-6j]), 1000.0)
    assert tiny["penetration"][0] == pytest.approx(2 * 3000 / 1e-6 * math.sqrt(3.0), rel=1e-9)


def test_speed_and_penetration_are_those_of_the_plane_wave(rng):
    """c = omega / Re k and a = omega / |Im k| for k = omega sqrt(rho / G*)."""
    mu = rng.uniform(-5e3, 8e3, 50) + 1j * rng.uniform(1.0, 6e3, 50)
    omega, rho = 2 * np.pi * 60, 1050.0
    k = omega * np.sqrt(rho / mu)
    q = clinical.quantities(mu, rho, 60.0)
    np.testing.assert_allclose(q["speed"], omega / k.real, rtol=1e-10)
    np.testing.assert_allclose(q["penetration"], omega / np.abs(k.imag), rtol=1e-10)
    np.testing.assert_allclose(q["depth"], 1 / np.abs(k.imag), rtol=1e-10)
    with pytest.raises(ValueError, match="rho"):
        clinical.quantities(mu, 0.0)


def _regions_dataset() -> Dataset:
    """16 x 16, two frequencies; region 2 (left half) purely elastic."""
    data = plane_wave_dataset()
    regions = np.ones(data.grid, int)
    regions[:8] = 2
    mu = np.array(data.mu)
    mu[:, :8] = 6000.0
    return Dataset(data.u, data.frequency, data.spacing, data.mask, mu, regions, 1000.0)


def test_summaries_are_medians_with_units_and_json_safe():
    data = _regions_dataset()
    out = clinical.summaries(data.mu, data.frequency, data.rho, data.mask, data.regions)
    assert out["units"]["speed"] == "m/s" and out["units"]["phase"] == "rad"
    assert list(out["regions"]) == ["60Hz", "90Hz"]
    elastic = out["regions"]["60Hz"]["2"]
    assert elastic["speed"] == pytest.approx(math.sqrt(6.0)) and elastic["penetration"] is None
    assert out["regions"]["90Hz"]["1"]["loss"] == pytest.approx(2 * np.pi * 90)
    json.dumps(out, allow_nan=False)
    one = clinical.summaries(data.mu[0], data.frequency, data.rho, data.mask)
    assert list(one["mask"]) == ["60-90Hz"] and "regions" not in one
    assert "depth" not in one["mask"]["60-90Hz"]


def test_make_result_records_clinical_medians(tmp_path):
    data = _regions_dataset()
    result = make_result(data, {"method": "test"}, data.mu[None], data.u, {})
    saved = result.save(tmp_path) / "metrics.json"
    clin = json.loads(saved.read_text())["clinical"]
    assert clin["regions"]["60Hz"]["2"]["storage"] == pytest.approx(6000.0)
    assert clin["mask"]["60Hz"]["magnitude"] > 0 and not (tmp_path / "maps").exists()


def _result(data: Dataset) -> Result:
    mu = data.mu if data.mu.ndim == data.ndim + 1 else data.mu[None]
    return Result(mu, data.u, data.mask, data.frequency, [], {}, {}, dataset=data)


def test_nifti_round_trip_2d(tmp_path):
    data = _regions_dataset()
    _result(data).save(tmp_path, nifti=True)
    maps = clinical.nifti_maps(data.mu, data.frequency, data.rho, 2)
    assert len(maps) == 2 * 7
    for stem, (values, _) in maps.items():
        img = nib.load(tmp_path / "maps" / f"{stem}.nii.gz")
        assert img.shape == (16, 16, 1)
        assert img.header.get_zooms() == pytest.approx((1.0, 1.0, 1.0))  # 1 mm
        assert img.header.get_xyzt_units()[0] == "mm"
        np.testing.assert_allclose(img.get_fdata()[..., 0], values, rtol=1e-6)
    img = nib.load(tmp_path / "maps" / "storage_Pa_60Hz.nii.gz")
    assert img.header["descrip"].item().decode() == "storage G' in Pa, 60Hz"
    assert img.header["sform_code"] == 2 and img.header["qform_code"] == 2
    assert (tmp_path / "maps" / "speed_m_per_s_90Hz.nii.gz").is_file()
    mask = nib.load(tmp_path / "maps" / "mask.nii.gz")
    assert mask.get_data_dtype() == np.uint8 and mask.get_fdata().all()


def test_nifti_keeps_the_input_affine_3d(tmp_path, rng):
    """A NIfTI input with a rotated, shifted affine (2 x 2 x 3 mm): the maps carry it."""
    shape = (6, 5, 4)
    rotation = np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]])
    affine = np.eye(4)
    affine[:3, :3] = rotation * [2.0, 2.0, 3.0]
    affine[:3, 3] = [10.0, -20.0, 5.0]
    wave = rng.normal(size=shape) + 1j * rng.normal(size=shape)
    nib.save(nib.Nifti1Image(wave.astype(np.complex64), affine), tmp_path / "wave.nii.gz")
    data = convert(tmp_path / "wave.nii.gz", frequency=50.0)
    np.testing.assert_allclose(data.spacing, [2e-3, 2e-3, 3e-3])
    np.testing.assert_allclose(grid_affine(tmp_path / "wave.nii.gz"), affine)
    np.testing.assert_allclose(data.affine, affine)  # carried by the dataset (and its .npz)
    data = load(save(data, tmp_path / "wave.npz"))
    mu = np.full((1, *shape), 3000.0 + 1000j)
    data = Dataset(data.u, data.frequency, data.spacing, mu=mu, affine=data.affine)
    _result(data).save(tmp_path / "out", nifti=True)  # the dataset's affine by default
    img = nib.load(tmp_path / "out" / "maps" / "speed_m_per_s_50Hz.nii.gz")
    assert img.shape == shape and img.header.get_zooms() == pytest.approx((2.0, 2.0, 3.0))
    np.testing.assert_allclose(img.affine, affine, atol=1e-6)
    assert img.header["sform_code"] == 1
    speed = clinical.quantities(mu[0], 1000.0)["speed"]
    np.testing.assert_allclose(img.get_fdata(), speed, rtol=1e-6)


def test_grid_affine_of_a_slice_and_the_diagonal_default(tmp_path):
    affine = np.diag([1.5, 2.0, 4.0, 1.0])
    nib.save(nib.Nifti1Image(np.zeros((5, 4, 3), np.float32), affine), tmp_path / "a.nii")
    np.testing.assert_allclose(grid_affine(tmp_path / "a.nii", "x-y"), affine[:, [0, 2, 1, 3]])
    np.testing.assert_allclose(files.nifti_affine([1e-3, 2e-3]), np.diag([1, 2, 1, 1.0]))


def test_missing_nibabel_names_the_pip_command(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "nibabel", None)
    with pytest.raises(MissingDependencyError, match="pip install"):
        files.write_nifti(tmp_path / "x.nii.gz", np.zeros((3, 3)), [1e-3, 1e-3])


def test_model_parameters_are_read_off_the_modulus():
    """Voigt mu_f = G' + i omega_f eta gives eta back (Pa s); a springpot
    mu_f = k (i omega_f)^alpha gives alpha back; other models and single maps give none;
    the NIfTI set names them with their unit."""
    freqs = np.array([60.0, 90.0])
    omega = 2 * np.pi * freqs[:, None, None]
    voigt = 3000.0 + 1j * omega * np.full((1, 4, 5), 2.5)
    assert clinical.model_parameters(voigt, freqs, "voigt")["viscosity"] == pytest.approx(2.5)
    power = 40.0 * (1j * omega) ** 0.25 * np.ones((1, 4, 5))
    np.testing.assert_allclose(clinical.model_parameters(power, freqs, "springpot")["alpha"], 0.25)
    assert clinical.model_parameters(power, freqs, "per-frequency") == {}
    assert clinical.model_parameters(power[0], freqs, "springpot") == {}
    maps = clinical.nifti_maps(power, freqs, 1000.0, 2, "springpot")
    assert maps["alpha_1"][1] == "springpot alpha in 1"
    assert "viscosity_Pa_s" in clinical.nifti_maps(voigt, freqs, 1000.0, 2, "voigt")


def test_springpot_dashpot_parameters_are_read_off_the_modulus():
    """mu_f = k (i omega_f)^alpha + i omega_f eta at three frequencies, alpha and eta
    varying over the grid, gives both back; the Voigt limit (alpha 0) and the springpot
    limit (eta 0) included; one frequency gives none."""
    freqs = np.array([30.0, 40.0, 50.0])
    omega = 2 * np.pi * freqs[:, None, None]
    alpha = np.array([0.0, 0.1, 0.25, 0.4])[:, None] * np.ones((1, 3))
    eta = np.array([0.0, 1.5, 4.0])[None, :] * np.ones((4, 1))
    mu = 900.0 * (1j * omega) ** alpha + 1j * omega * eta
    got = clinical.model_parameters(mu, freqs, "springpot-dashpot")
    np.testing.assert_allclose(got["alpha"], alpha, atol=1e-9)
    np.testing.assert_allclose(got["viscosity"], eta, atol=1e-9)
    assert clinical.model_parameters(mu[:1], freqs[:1], "springpot-dashpot") == {}
    maps = clinical.nifti_maps(mu, freqs, 1000.0, 2, "springpot-dashpot")
    assert {"alpha_1", "viscosity_Pa_s"} <= set(maps)
