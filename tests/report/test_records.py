"""metrics.json holds the typed records of helmholtz_pinn.report.records and nothing else:
every key a PINN fit, an ensemble, a resumed fit and a baseline write is declared there,
and each fit check has exactly the FitCheck fields."""

import json
import typing

import pytest
from settings import SMALL, plane_wave_dataset

from helmholtz_pinn.assess.fit_checks import FitCheck
from helmholtz_pinn.config import Config
from helmholtz_pinn.fit.inversion import invert
from helmholtz_pinn.report.records import Metrics
from helmholtz_pinn.report.result import baseline_result

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _declared(record) -> set[str]:
    return set(typing.get_type_hints(record))


def _check(metrics: dict) -> None:
    undeclared = set(metrics) - _declared(Metrics)
    assert not undeclared, f"metrics.json keys missing from records.Metrics: {undeclared}"
    for check in metrics["fit_quality"]:
        assert set(check) == _declared(FitCheck)


def test_every_key_of_metrics_json_is_declared(tmp_path):
    data = plane_wave_dataset(n=12)
    cfg = Config(**{**SMALL, "ensemble": 2})
    fit = invert(data, cfg, progress=False, devices=1, checkpoint_dir=tmp_path / "ck")
    resumed = invert(data, cfg, progress=False, devices=1, checkpoint_dir=tmp_path / "ck",
                     resume=True)  # fmt: skip
    for result in (fit, resumed, baseline_result(data, "ahi")):
        result.save(tmp_path / "out")
        _check(json.loads((tmp_path / "out" / "metrics.json").read_text()))
    assert resumed.metrics["resumed_from_step"] == fit.metrics["steps"]


def test_an_undeclared_key_is_caught():
    with pytest.raises(AssertionError, match="misspelt_key"):
        _check({"misspelt_key": 1, "fit_quality": []})
