"""Training-log callbacks: history file, TensorBoard event files, chaining."""

import builtins
import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from helmholtz_pinn.config import Config
from helmholtz_pinn.report import logs


def _records(n=4):
    return [
        {
            "step": 100 * (i + 1),
            "time_s": 0.5 * (i + 1),
            "lr": 1e-3,
            "loss": 1.0 / (i + 1),
            "data": 0.7 / (i + 1),
            "pde": 0.3 / (i + 1),
            "last_loss": 0.9 / (i + 1),
            "last_data": 0.6 / (i + 1),
            "last_pde": 0.3 / (i + 1),
            "retries": 0,
        }
        for i in range(n)
    ]


def test_history_logger_keeps_records_and_writes_json_lines(tmp_path):
    path = tmp_path / "sub" / "history.jsonl"
    log = logs.HistoryLogger(path)
    records = _records()
    records[1]["pde"] = math.nan
    for r in records:
        assert not log(r)
    assert log.column("step") == [100, 200, 300, 400]
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 4 and lines[0]["loss"] == 1.0
    assert lines[1]["pde"] is None  # NaN written as null: valid JSON
    records[0]["loss"] = -1.0
    assert log.records[0]["loss"] == 1.0  # a copy, not the caller's dict


def test_history_logger_stops_after_the_time_budget():
    log = logs.HistoryLogger(stop_after_s=1.2)
    assert [log(r) for r in _records()] == [False, False, True, True]
    with pytest.raises(ValueError, match="stop_after_s"):
        logs.HistoryLogger(stop_after_s=0)


def test_chain_calls_all_and_stops_when_any_asks():
    seen = []
    chained = logs.chain(seen.append, None, lambda r: r["step"] >= 200)
    assert [chained(r) for r in _records(3)] == [False, True, True]
    assert len(seen) == 3


def test_tensorboard_missing_package_names_it(monkeypatch, tmp_path):
    real_import = builtins.__import__

    def no_tensorboardx(name, *args, **kwargs):
        if name == "tensorboardX" or name.startswith("tensorboardX."):
            raise ModuleNotFoundError("No module named 'tensorboardX'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tensorboardx)
    with pytest.raises(logs.MissingDependencyError, match="pip install tensorboardX"):
        logs.TensorBoardLogger(tmp_path / "tb")
    assert issubclass(logs.MissingDependencyError, ImportError)


def _scalars(logdir):
    """{tag: [(step, value), ...]} read back from the event files."""
    from tensorboardX.proto import event_pb2

    out: dict[str, list] = {}
    for path in sorted(logdir.glob("events.out.tfevents.*")):
        data = path.read_bytes()
        pos = 0
        while pos < len(data):  # TFRecord: len u64, crc u32, payload, crc u32
            n = int.from_bytes(data[pos : pos + 8], "little")
            event = event_pb2.Event.FromString(data[pos + 12 : pos + 12 + n])
            pos += 12 + n + 4
            for v in event.summary.value:
                if v.HasField("simple_value"):
                    out.setdefault(v.tag, []).append((event.step, v.simple_value))
    return out


def test_tensorboard_logger_writes_scalars_per_block(tmp_path):
    pytest.importorskip("tensorboardX")
    logdir = tmp_path / "tb"
    with logs.TensorBoardLogger(logdir) as tb:
        for r in _records():
            assert tb(r) is None  # never asks to stop
    scalars = _scalars(logdir)
    assert [s for s, _ in scalars["loss/total"]] == [100, 200, 300, 400]
    np.testing.assert_allclose(
        [v for _, v in scalars["loss/pde"]], [0.3, 0.15, 0.1, 0.075], rtol=1e-6
    )
    assert {"loss/data", "train/learning_rate", "train/wall_time_s", "loss_last_step/total"} <= set(
        scalars
    )


def test_tensorboard_log_result(tmp_path):
    pytest.importorskip("tensorboardX")
    result = SimpleNamespace(
        mu=np.full((1, 6, 7), 3e3 + 300j),
        dataset=None,
        config=Config(steps=100),
        metrics={
            "steps": 100,
            "final_loss": 0.01,
            "median_rel_error_storage": 0.05,
            "device": "cpu:0",
            "regions": {"1": {}},
        },
    )
    with logs.TensorBoardLogger(tmp_path / "tb") as tb:
        tb.log_result(result)
    scalars = _scalars(tmp_path / "tb")
    assert scalars["metrics/median_rel_error_storage"] == [(100, pytest.approx(0.05))]
    assert "metrics/device" not in scalars


def test_logger_as_invert_callback(tmp_path):
    """End to end on a tiny phantom: invert calls the callback once per block."""
    pytest.importorskip("tensorboardX")
    from helmholtz_pinn import invert
    from helmholtz_pinn.forward.phantoms import simulate_phantom

    data = simulate_phantom(
        "homogeneous", shape=(12, 12), spacing=4e-3, frequencies=[60.0], components=1
    )
    history = logs.HistoryLogger()
    with logs.TensorBoardLogger(tmp_path / "tb") as tb:
        result = invert(
            data,
            callback=logs.chain(history, tb),
            progress=False,
            steps=40,
            sync_interval=20,
            width=8,
            depth=1,
            mu_width=8,
            mu_depth=1,
            n_features=4,
            batch_size=64,
            pde_warmup=10,
        )
    assert history.column("step") == [r["step"] for r in result.history] == [20, 40]
    assert [s for s, _ in _scalars(tmp_path / "tb")["loss/total"]] == [20, 40]


def _read_csv(path):
    import csv

    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_history_csv_of_a_single_fit_has_one_row_per_block(tmp_path):
    from helmholtz_pinn.report.files import write_history

    write_history(tmp_path / "history.csv", _records(3))
    rows = _read_csv(tmp_path / "history.csv")
    assert [r["step"] for r in rows] == ["100", "200", "300"]
    assert "member" not in rows[0] and float(rows[1]["loss"]) == 0.5


def test_history_csv_of_a_batched_fit_has_one_row_per_block_and_member(tmp_path):
    """An ensemble of 2 (lists per member in lr, losses, retries): a member column, every
    cell a number (no JSON lists), the shared step and time repeated."""
    from helmholtz_pinn.report.files import write_history

    history = []
    for r in _records(3):
        batched = {k: [v, 2 * v] for k, v in r.items() if k not in ("step", "time_s")}
        history.append({"step": r["step"], "time_s": r["time_s"], **batched})
    write_history(tmp_path / "history.csv", history)
    header = (tmp_path / "history.csv").read_text().splitlines()[0].split(",")
    assert header[:3] == ["step", "member", "time_s"]
    rows = _read_csv(tmp_path / "history.csv")
    assert [(r["step"], r["member"]) for r in rows] == [
        (s, m) for s in ("100", "200", "300") for m in ("0", "1")
    ]
    for row in rows:
        values = [float(v) for v in row.values()]  # every cell parses as a number
        assert all(math.isfinite(v) for v in values)
    assert float(rows[2]["loss"]) == 0.5 and float(rows[3]["loss"]) == 1.0
    assert rows[2]["time_s"] == rows[3]["time_s"] == "1.0"


def test_history_csv_of_a_real_ensemble(tmp_path):
    """A 10-step ensemble of 2: the records invert returns give 2 rows per block."""
    from settings import SMALL

    from helmholtz_pinn import invert
    from helmholtz_pinn.forward.phantoms import simulate_phantom
    from helmholtz_pinn.report.files import write_history

    data = simulate_phantom(
        "homogeneous", shape=(12, 12), spacing=4e-3, frequencies=[60.0], components=1
    )
    result = invert(data, progress=False, ensemble=2, **SMALL)
    write_history(tmp_path / "history.csv", result.history)
    rows = _read_csv(tmp_path / "history.csv")
    assert [(r["step"], r["member"]) for r in rows] == [
        ("5", "0"),
        ("5", "1"),
        ("10", "0"),
        ("10", "1"),
    ]
    assert all(math.isfinite(float(v)) for r in rows for v in r.values())
