"""The command line's own behaviour, without a fit: --pde auto parses, library keywords
are shown as options, a finished result is not replaced without --overwrite, a folder held
by another run is refused, and input errors answer before JAX is imported."""

import json
import subprocess
import sys
import textwrap

import pytest
from settings import plane_wave_dataset

from helmholtz_pinn.cli.commands import cli_voice, main
from helmholtz_pinn.cli.parser import config_from, parse_args
from helmholtz_pinn.io.dataset import save


def test_pde_auto_is_accepted_and_is_the_default():
    args = parse_args(["invert", "--pde", "auto"])
    assert config_from(args).pde == "auto" == config_from(parse_args(["invert"])).pde


def test_cpu_sized_settings_take_more_steps_for_three_components_and_yield_to_options():
    from helmholtz_pinn.config import ConfigError, cpu_settings

    scalar = config_from(parse_args(["invert", "--cpu-sized"]), n_comp=1)
    elastic = config_from(parse_args(["invert", "--cpu-sized"]), n_comp=3)
    assert (scalar.steps, elastic.steps) == (3000, 5000)
    assert scalar.width == elastic.width == 64
    assert (scalar.batch_size, elastic.batch_size) == (512, 1024)
    assert (scalar.learning_rate, elastic.learning_rate) == (2e-3, 1e-3)
    mine = config_from(parse_args(["invert", "--cpu-sized", "--steps", "700", "--width", "48"]), 3)
    assert (mine.steps, mine.width, mine.mu_width) == (700, 48, 32)
    assert config_from(parse_args(["invert"]), n_comp=3).steps == 10000  # only when asked
    with pytest.raises(ConfigError, match="n_comp"):
        cpu_settings(4)


@pytest.mark.parametrize(
    "library, cli",
    [
        ("pass force=True if the values are right", "pass --force if the values are right"),
        ("try more steps= or another pde=; check", "try more --steps or another --pde; check"),
        ("try another seed= or ensemble=3 (members", "try another --seed or --ensemble 3 (members"),
        ("resume='strict' does not start afresh", "--resume-strict does not start afresh"),
        ("mu_ref_pa=3000 and G'=5 stay", "mu_ref_pa=3000 and G'=5 stay"),  # not options
    ],
)
def test_library_keywords_become_options(library, cli):
    assert cli_voice(library) == cli


def test_a_finished_result_is_not_replaced_without_overwrite(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "metrics.json").write_text(json.dumps({"steps": 10}))
    assert main(["invert", str(tmp_path / "missing.npz"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already holds a result (metrics.json)" in err
    assert "--overwrite" in err and json.loads((out / "metrics.json").read_text())["steps"] == 10


def test_a_folder_held_by_another_run_is_refused_with_its_pid(tmp_path, capsys):
    hold = textwrap.dedent(
        """
        import sys, time
        from helmholtz_pinn.report.folder_lock import FolderLock
        with FolderLock(sys.argv[1]):
            print("held", flush=True)
            time.sleep(60)
        """
    )
    data = save(plane_wave_dataset(n=12), tmp_path / "d.npz")
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-c", hold, str(out)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "held"
        code = main(["baseline", str(data), "--out", str(out)])
        err = capsys.readouterr().err
        assert code == 2 and f"in use by process {proc.pid}" in err and err.count("\n") == 1
    finally:
        proc.kill()
        proc.wait()


def test_input_errors_answer_before_jax_is_imported(tmp_path):
    code = textwrap.dedent(
        f"""
        import sys
        from helmholtz_pinn.cli import main
        missing, out = {str(tmp_path / "missing.npz")!r}, {str(tmp_path / "o")!r}
        status = main(["invert", missing, "--out", out])
        print(status, "jax" in sys.modules)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["2", "False"], proc.stderr
    assert proc.stderr.count("\n") == 1 and "missing.npz" in proc.stderr
    assert not (tmp_path / "o").exists()


def test_the_summary_shows_contrast_and_loss_modulus_beside_the_median():
    from helmholtz_pinn.cli.commands import _accuracy_line

    facts = {
        "steps": 3000,
        "wall_time_s": 35.2,
        "median_rel_error_storage": 0.0418,
        "median_rel_error_loss": 0.2,
        "pearson_r_storage": 0.879,
        "contrast_transfer": {"2": 0.98, "3": 0.5, "4": None},
    }
    assert _accuracy_line(facts) == (
        "3000 steps; 35.2 s; median G' error 4.2%; median G'' error 20.0%; R 0.879; "
        "contrast 2: 0.98, 3: 0.50"
    )
    # a viscosity-only target (4) has no G' contrast to read: its G'' contrast is shown
    loss = {"2": 0.9, "3": None, "4": 0.71}
    assert _accuracy_line({**facts, "contrast_transfer_loss": loss}).endswith(
        "contrast 2: 0.98, 3: 0.50; G'' contrast 4: 0.71"
    )
    assert _accuracy_line({"steps": 10}) == "10 steps"  # no truth: no accuracy
    with_lbfgs = {"steps": 5000, "lbfgs": {"steps": 1000, "points": 16384, "kept": True}}
    assert _accuracy_line(with_lbfgs) == "5000 steps + 1000 L-BFGS"
    skipped = {"steps": 5000, "lbfgs": {"steps": 1000, "skipped": "runs on one device"}}
    assert _accuracy_line(skipped) == "5000 steps"


def test_the_law_line_reads_the_auto_choice_or_the_springpot_dashpot_parameters():
    from helmholtz_pinn.cli.commands import _law_line

    assert _law_line({"law": {"line": "law: voigt, chosen by the data"}}) == (
        "law: voigt, chosen by the data"
    )
    model = {"name": "springpot-dashpot", "mask": {"alpha": 0.0274, "viscosity": 1.7357}}
    assert _law_line({"clinical": {"model": model}}) == (
        "law: springpot-dashpot, median alpha 0.027 and eta 1.74 Pa s over the mask (alpha 0 "
        "is the Voigt solid, eta 0 the springpot)"
    )
    springpot = {"name": "springpot", "mask": {"alpha": 0.25}}
    assert _law_line({"clinical": {"model": springpot}}) is None
    assert _law_line({}) is None


def test_an_implausible_file_of_a_batch_is_named(tmp_path, capsys):
    import dataclasses

    import numpy as np

    good = save(plane_wave_dataset(n=12), tmp_path / "good.npz")
    wrong = dataclasses.replace(plane_wave_dataset(n=12), spacing=np.array([1.0, 1.0]))
    bad = save(wrong, tmp_path / "mm.npz")
    code = main(["invert", str(good), str(bad), "--out", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and f"{bad}: implausible dataset" in err and err.count("\n") == 1
