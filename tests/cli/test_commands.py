"""The command line's own behaviour, without a fit: --pde auto parses, library keywords
are shown as options, a finished result is not replaced without --overwrite, a folder held
by another run is refused, and input errors answer before JAX is imported."""

import json
import subprocess
import sys
import textwrap

import numpy as np
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
    assert config_from(parse_args(["invert"]), n_comp=3).steps is None  # the plan decides
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
    assert "--resume" in err  # invert can continue the run
    assert main(["baseline", str(tmp_path / "missing.npz"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--overwrite" in err and "--resume" not in err  # baseline takes no --resume


def test_version_prints_the_package_version(capsys):
    from helmholtz_pinn import __version__

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out == f"helmholtz-pinn {__version__}\n"


def test_the_law_consistency_advice_names_only_what_did_not_run():
    """After mu_model="auto" tried both laws, the advice is not to fit with auto again."""
    from helmholtz_pinn.assess.fit_checks import fit_quality

    mu, mask = np.full((2, 4, 4), 3000.0 + 0j), np.ones((4, 4), bool)

    def advice(tried, asked=None):
        checks = fit_quality(mu, mask, 3000.0, law_spread=0.5, laws_tried=tried,
                             mu_model=asked, checks=("law_consistency",))  # fmt: skip
        assert not checks[0]["passed"]
        return checks[0]["message"]

    assert "mu_model='auto'" in advice((), "voigt")  # a named law: try auto
    after_auto = advice(("springpot", "voigt"))
    assert "'auto'" not in after_auto and "per-frequency" in after_auto and "axes=" in after_auto


def test_figures_carry_the_law_steps_and_input():
    from helmholtz_pinn.report.figures import caption

    facts = {"steps": 3000, "lbfgs": {"steps": 1000}, "law": {"mu_model": "voigt"},
             "input": "scan.npz"}  # fmt: skip
    assert caption(facts) == "PINN, law voigt, 3000 steps + 1000 L-BFGS; input scan.npz"
    assert caption(facts, data_only=True) == "input scan.npz"
    ahi = {"method": "ahi", "baseline_settings": {"smoothing": "gaussian"}, "input": "a.npz"}
    assert caption(ahi) == "ahi baseline, gaussian smoothing; input a.npz"


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
    """And before the simulators (SciPy's sparse solvers): invert FILE never needs them."""
    code = textwrap.dedent(
        f"""
        import sys
        from helmholtz_pinn.cli import main
        missing, out = {str(tmp_path / "missing.npz")!r}, {str(tmp_path / "o")!r}
        status = main(["invert", missing, "--out", out])
        print(status, "jax" in sys.modules, "helmholtz_pinn.forward" in sys.modules)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["2", "False", "False"], proc.stderr
    assert proc.stderr.count("\n") == 1 and "missing.npz" in proc.stderr
    assert not (tmp_path / "o").exists()


def test_the_summary_states_the_map_each_target_and_one_verdict():
    """The summary shows the medians per frequency (kPa from 1 kPa), each region with its
    equivalent diameter, error and contrast, the whole command's time and one verdict."""
    from types import SimpleNamespace

    import numpy as np

    from helmholtz_pinn.report.summary import summary, target_sizes

    regions = np.ones((40, 40), int)
    yy, xx = np.mgrid[:40, :40]
    regions[(xx - 20) ** 2 + (yy - 20) ** 2 <= 10**2] = 2  # a disk of radius 10 voxels
    sizes = target_sizes(regions, np.array([1e-3, 1e-3]))
    assert abs(sizes["2"] - 20) < 0.5  # 20 mm across: the disk's diameter
    q = {"storage": 3040.0, "loss": 312.0, "phase": 0.102}
    facts = {
        "steps": 3000,
        "metric_voxels": 1600,
        "clinical": {"mask": {"80Hz": q, "60Hz": q}, "regions": {"60Hz": {"2": q, "1": q}}},
        "regions": {"2": {"true_median_storage_pa": 1e4, "median_rel_error_storage": 0.38}},
        "contrast_transfer": {"2": 0.46},
        "median_rel_error_storage": 0.039,
        "fit_quality": [
            {"name": "data_fit", "passed": False, "skipped": False, "message": "try seed="},
            {"name": "loss_decrease", "passed": True, "skipped": False, "message": ""},
        ],
    }
    data = SimpleNamespace(regions=regions, spacing=np.array([1e-3, 1e-3]), n_comp=2, n_freq=3)
    result = SimpleNamespace(metrics=facts, dataset=data, config=None)
    text = summary(result, wall_time_s=988.0)
    lines = text.splitlines()
    assert lines[1] == "  60 Hz: G' 3.04 kPa, G'' 312 Pa, phase angle 0.10 rad"  # sorted by Hz
    assert "  target 2 (20 mm): G' 3.04 kPa" in text and "error 38%), contrast 0.46" in text
    assert lines.index(next(x for x in lines if x.startswith("  background"))) < lines.index(
        next(x for x in lines if x.startswith("  target 2"))
    )
    assert "988 s for the whole command" in text
    verdict = [x for x in lines if x.startswith("verdict:")]
    assert len(verdict) == 1 and "1 of 2 fit checks failed (data_fit)" in verdict[0]
    assert "  data_fit: try seed=" in text  # what to do
    assert "check its axes=" not in text  # C != F: no c/f swap to suspect
    data.n_comp = data.n_freq = 3
    assert "check its axes=" in summary(result)
    facts["fit_quality"][0]["passed"] = True
    assert summary(result).splitlines()[-1] == "verdict: the 2 fit checks passed"
    # a law kept on a tie of the spreads is not "chosen by the data"
    facts["law"] = {"mu_model": "springpot", "tried": {"springpot": 0.0, "voigt": 0.0}}
    assert "law springpot (chosen by the data)" in summary(result)
    facts["law"]["determined"] = False
    assert "law springpot (undetermined)" in summary(result)


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


def test_the_elastic_solve_leaves_sigint_and_sigterm_to_their_default_action():
    """Inside the FEM solve (compiled code, where a Python handler would run only once it
    returns) Ctrl-C and SIGTERM end the process at once; the handlers come back after."""
    import signal

    from helmholtz_pinn.cli.commands import _signals_stop_at_once

    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with _signals_stop_at_once():
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
        assert signal.getsignal(signal.SIGINT) == signal.SIG_DFL
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_a_target_s_size_is_the_diameter_of_its_widest_section():
    """A cylinder of radius 5 voxels (1 mm) through 4 of 6 slices reads as 10 mm, in 3-D
    as in each 2-D slice."""
    from helmholtz_pinn.report.summary import target_sizes

    yy, xx = np.mgrid[:30, :30]
    disk = (xx - 15) ** 2 + (yy - 15) ** 2 <= 5**2
    volume = np.ones((30, 30, 6), int)
    volume[disk, 1:5] = 2
    h = np.array([1e-3, 1e-3, 1e-3])
    assert abs(target_sizes(volume, h)["2"] - 10) < 0.6
    assert target_sizes(volume, h)["2"] == target_sizes(volume[..., 2], h[:2])["2"]


def test_the_figures_modules_load_in_a_background_thread():
    """What ``invert`` on a GPU imports while the fit runs (matplotlib for the figures):
    loaded by the returned thread, not by the caller; a module that cannot be imported
    is left to its user (no error in the thread)."""
    code = textwrap.dedent(
        """
        import sys, threading
        from helmholtz_pinn.cli import commands as c
        assert "matplotlib" not in sys.modules
        thread = c._import_in_background((*c.FIGURE_MODULES, "no_such_module"))
        assert thread is not threading.current_thread()
        thread.join()
        print(all(m in sys.modules for m in c.FIGURE_MODULES))
        """
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.strip() == "True", run.stderr
