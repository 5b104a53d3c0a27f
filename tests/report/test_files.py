"""Result files are written beside and moved in whole: a write that fails half-way (a full
disk) leaves the earlier result intact, with no partial file and no stage left behind; a
kill during the swap is finished by the next command into the folder (rolled forward
with the stage's marker, rolled back without it), and a folder holding metrics.json
holds one whole result at every moment of the swap."""

import errno
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from settings import plane_wave_dataset

from helmholtz_pinn.cli.commands import main
from helmholtz_pinn.errors import OutputError
from helmholtz_pinn.io import dataset as data
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

    def full(*args, **kwargs):  # after mu.npz and metrics.json, before config.json
        raise OSError(errno.ENOSPC, "No space left on device", "history.csv")

    monkeypatch.setattr(files, "write_history", full)
    with pytest.raises(OutputError, match="No space left on device"):
        second.save(tmp_path)
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    assert after == before and not (tmp_path / files.STAGE).exists()


@pytest.mark.parametrize("error", [OSError(errno.ENOSPC, "No space left", "loss.png"), KeyError])
def test_a_failure_in_the_figures_leaves_the_new_maps_and_facts_whole(
    results, tmp_path, monkeypatch, error
):
    """The figures are drawn once mu.npz and metrics.json are in place: a full disk (an
    OutputError that says the maps are written) or a bug in a figure (raised as it is)
    loses neither, and leaves no figure of the earlier run beside them."""
    first, second = results
    first.save(tmp_path)
    drawn = figures.save_all

    def fails_half_way(result, dataset, out, **kwargs):
        drawn(result, dataset, out, **kwargs)  # some PNGs in the stage, none moved in yet
        raise error

    monkeypatch.setattr(figures, "save_all", fails_half_way)
    expected = OutputError if isinstance(error, OSError) else KeyError
    with pytest.raises(expected) as raised:
        second.save(tmp_path)
    if expected is OutputError:
        assert "the maps and facts (mu.npz, metrics.json) are written" in str(raised.value)
    with np.load(tmp_path / "mu.npz") as saved:
        np.testing.assert_array_equal(saved["mu"], second.mu)
    assert (
        json.loads((tmp_path / "metrics.json").read_text())["baseline_settings"]["smoothing"]
        == "gaussian"
    )
    assert not list(tmp_path.glob("*.png")) and not (tmp_path / files.STAGE).exists()


def test_a_new_result_replaces_every_file_of_the_old_one(results, tmp_path):
    first, second = results
    first.save(tmp_path)
    (tmp_path / "notes.txt").write_text("the user's own file")
    second.save(tmp_path)
    with np.load(tmp_path / "mu.npz") as saved:
        np.testing.assert_array_equal(saved["mu"], second.mu)
    assert (tmp_path / "notes.txt").read_text() == "the user's own file"
    assert not (tmp_path / files.STAGE).exists()


class Killed(BaseException):
    """The process ending at this point (nothing in the package catches it)."""


def _contents(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones too), by relative path."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


@pytest.fixture(scope="module")
def earlier(results, tmp_path_factory):
    """A folder holding the first result and the data file both results came from; each
    test copies the folder."""
    folder = tmp_path_factory.mktemp("earlier")
    results[0].save(folder / "out")
    data.save(plane_wave_dataset(n=12), folder / "d.npz")
    return folder


def _refused_after_the_lock(earlier: Path, out: Path, capsys) -> list[str]:
    """The next command into ``out``: a baseline refused after it took the folder lock
    (--sigma -1), so the folder shows what taking it did; its stderr lines."""
    args = ["baseline", str(earlier / "d.npz"), "--out", str(out), "--overwrite"]
    assert main([*args, "--sigma", "-1"]) == 2
    return capsys.readouterr().err.strip().splitlines()


def test_a_swap_killed_after_the_first_rename_is_finished_by_the_next_command(
    results, earlier, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "out"
    shutil.copytree(earlier / "out", out)
    (out / "notes.txt").write_text("the user's own file")
    new, replace = {}, Path.replace

    def killed_after_the_first_rename(self, target):
        if self.parent.name == files.STAGE and Path(target).parent == out:
            if new:
                raise Killed
            staged = _contents(self.parent).items()  # the whole staged result
            new.update((k, v) for k, v in staged if not k.startswith(files.EARLIER))
            del new[files.MARKER]
        return replace(self, target)

    monkeypatch.setattr(Path, "replace", killed_after_the_first_rename)
    with pytest.raises(Killed):
        results[1].save(out)
    monkeypatch.undo()
    assert not (out / "metrics.json").exists()  # no reader takes the mix for a result
    assert (out / files.STAGE / files.MARKER).is_file()

    lines = _refused_after_the_lock(earlier, out, capsys)
    assert (
        lines[0]
        == f"note: {out}: finished moving in the new result that a stopped run left half-moved"
    )
    assert lines[1].startswith("helmholtz-pinn baseline: error: baseline ahi: sigma must be")
    assert _contents(out) == {**new, "notes.txt": b"the user's own file"}


def test_a_run_killed_while_drawing_its_figures_leaves_its_maps_and_facts(
    results, earlier, tmp_path, capsys, monkeypatch
):
    """Killed at the first figure moved in: the new mu.npz and metrics.json are in place;
    the next command into the folder removes the half-drawn figures and says so."""
    out = tmp_path / "out"
    shutil.copytree(earlier / "out", out)
    replace, rmtree, killed = Path.replace, shutil.rmtree, []

    def killed_at_the_first_figure(self, target):
        if self.parent.name == files.STAGE and self.suffix == ".png":
            killed.append(self)
            raise Killed
        return replace(self, target)

    monkeypatch.setattr(Path, "replace", killed_at_the_first_figure)
    monkeypatch.setattr(shutil, "rmtree", lambda *a, **k: None if killed else rmtree(*a, **k))
    with pytest.raises(Killed):
        results[1].save(out)
    monkeypatch.undo()
    stage = out / files.STAGE
    assert {p.suffix for p in stage.iterdir()} == {".png"}
    lines = _refused_after_the_lock(earlier, out, capsys)
    assert lines[0] == (
        f"note: {out}: removed the figures of a run stopped while drawing them ({stage}); "
        "its maps and facts (mu.npz, metrics.json) are whole"
    )
    with np.load(out / "mu.npz") as saved:
        np.testing.assert_array_equal(saved["mu"], results[1].mu)
    assert not stage.exists() and not list(out.glob("*.png"))


def test_a_stage_without_its_marker_is_removed_and_the_earlier_result_kept(
    earlier, tmp_path, capsys
):
    out = tmp_path / "out"
    shutil.copytree(earlier / "out", out)
    before = _contents(out)
    stage = out / files.STAGE  # a run killed while writing: no marker
    stage.mkdir()
    (stage / "mu.npz").write_bytes(b"half a file")
    (stage / "metrics.json").write_text("{}")

    lines = _refused_after_the_lock(earlier, out, capsys)
    assert lines[0] == (
        f"note: {out}: removed the unfinished result of a run stopped while writing it ({stage}); "
        "the earlier result was not touched"
    )
    assert len(lines) == 2 and _contents(out) == before


def test_a_folder_with_metrics_json_holds_one_whole_result_at_every_step_of_a_swap(
    tmp_path, monkeypatch
):
    """A swap killed before each of its deletions, renames and its last clean-up in turn:
    the folder holds metrics.json only with the whole new result (or the whole earlier
    one), and finishing the swap always gives the new result; the earlier run's files
    that the new one lacks are gone, the user's file stays."""
    old = {"mu.npz": b"old mu", "metrics.json": b"old", "uncertainty.png": b"old spread"}
    old |= {"maps/a.nii.gz": b"old a", "notes.txt": b"the user's"}
    new = {"mu.npz": b"new mu", "metrics.json": b"new", "config.json": b"new settings"}
    new |= {"maps/a.nii.gz": b"new a", "maps/b.nii.gz": b"new b"}
    whole_new = {**new, "notes.txt": b"the user's"}
    replace, unlink, rmtree = Path.replace, Path.unlink, shutil.rmtree
    for k in range(1, 20):
        out = tmp_path / str(k)
        for name, content in old.items():
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_bytes(content)
        steps = []

        def step(real, out=out, steps=steps, k=k):
            def killed_at_step_k(path, *args, **kwargs):
                if (out / files.STAGE / files.MARKER).is_file() and out in Path(path).parents:
                    steps.append(path)
                    if len(steps) == k:
                        raise Killed
                return real(path, *args, **kwargs)

            return killed_at_step_k

        monkeypatch.setattr(Path, "replace", step(replace))
        monkeypatch.setattr(Path, "unlink", step(unlink))
        monkeypatch.setattr(shutil, "rmtree", step(rmtree))
        try:
            with files.staged(out) as stage:
                for name, content in new.items():
                    (stage / name).parent.mkdir(exist_ok=True)
                    (stage / name).write_bytes(content)
        except Killed:
            pass
        monkeypatch.undo()
        seen = {n: c for n, c in _contents(out).items() if not n.startswith(files.STAGE)}
        if "metrics.json" in seen:
            assert seen in (old, whole_new), f"killed at step {k}"
        if len(steps) < k:  # the swap ran to its end: every kill point was tried
            break
        assert files.finish_swap(out).startswith(f"{out}: finished moving in")
        assert _contents(out) == whole_new, f"killed at step {k}"
    assert 8 <= k < 20


def test_a_failed_rename_during_the_swap_leaves_the_folder_as_it_was(tmp_path, monkeypatch):
    """An error (a full disk, EIO) at each rename of a swap in turn: the folder holds the
    earlier result, byte for byte, with no stage left; the next save works."""
    old = {"mu.npz": b"old mu", "metrics.json": b"old", "uncertainty.png": b"old spread"}
    old |= {"maps/a.nii.gz": b"old a", "notes.txt": b"the user's"}
    new = {"mu.npz": b"new mu", "metrics.json": b"new", "maps/b.nii.gz": b"new b"}
    replace = Path.replace
    for k in range(1, 20):
        out = tmp_path / str(k)
        for name, content in old.items():
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_bytes(content)
        renames = []

        def fails_at_k(path, target, out=out, renames=renames, k=k):
            if (out / files.STAGE / files.MARKER).is_file() and out in Path(path).parents:
                renames.append(path)
                if len(renames) == k:
                    raise OSError(errno.ENOSPC, "No space left on device", str(target))
            return replace(path, target)

        monkeypatch.setattr(Path, "replace", fails_at_k)
        try:
            with files.staged(out) as stage:
                for name, content in new.items():
                    (stage / name).parent.mkdir(exist_ok=True)
                    (stage / name).write_bytes(content)
        except OutputError as err:
            assert str(err).endswith("the earlier result is back in place"), k
        monkeypatch.undo()
        if len(renames) < k:  # the swap ran to its end: every rename was tried
            break
        assert _contents(out) == old, f"failed at rename {k}"
        with files.staged(out) as stage:  # a later command works
            (stage / "metrics.json").write_bytes(b"later")
        assert (out / "metrics.json").read_bytes() == b"later"
    assert 7 <= k < 20


@pytest.mark.parametrize("name", ["maps", "mu.npz"])
def test_a_file_or_folder_in_the_way_is_named_before_anything_is_replaced(tmp_path, name):
    """A file named ``maps`` where the NIfTI maps go (or a folder named like a result
    file): one line naming it, the earlier result untouched, no stage left; the next
    command works once it is moved away."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "metrics.json").write_bytes(b"earlier")
    in_the_way = out / name
    in_the_way.mkdir() if name.endswith(".npz") else in_the_way.write_bytes(b"user's")
    before = _contents(out)
    with pytest.raises(OutputError, match=f"{in_the_way} is a (file|folder) where"):
        with files.staged(out) as stage:
            (stage / "maps").mkdir()
            (stage / "maps" / "a.nii.gz").write_bytes(b"new a")
            (stage / "mu.npz").write_bytes(b"new mu")
            (stage / "metrics.json").write_bytes(b"new")
    assert _contents(out) == before and not (out / files.STAGE).exists()
    with pytest.raises(OutputError, match=f"{in_the_way} is a (file|folder), but a run"):
        files.check_output(out, nifti=True)


@pytest.mark.parametrize("name", ["checkpoints", ".writing", "checkpoints.previous"])
def test_a_file_named_like_an_output_folder_is_refused_before_training(
    name, tmp_path, monkeypatch, capsys
):
    from helmholtz_pinn.fit import inversion

    def never(*args, **kwargs):
        pytest.fail("trained although the output folder cannot take the result")

    monkeypatch.setattr(inversion, "invert", never)
    data.save(plane_wave_dataset(n=12), tmp_path / "d.npz")
    out = tmp_path / "out"
    out.mkdir()
    (out / name).write_bytes(b"a user's file")
    assert main(["invert", str(tmp_path / "d.npz"), "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"helmholtz-pinn invert: error: {out / name} is a file, but a run writes a folder "
        "of that name there: move it away or choose another output folder"
    )
    assert (out / name).read_bytes() == b"a user's file"


def test_an_output_name_that_is_not_utf8_is_refused_before_training(tmp_path, capsys):
    out = tmp_path / os.fsdecode(b"res\xff")
    data.save(plane_wave_dataset(n=12), tmp_path / "d.npz")
    assert main(["baseline", str(tmp_path / "d.npz"), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("is not valid UTF-8: choose a name in UTF-8") and "\n" not in err
    assert not out.exists()
