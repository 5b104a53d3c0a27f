"""Output folder handling: the one place that creates and writes result files.

NIfTI maps (:func:`write_nifti_maps`) go to ``OUT/maps/<stem>.nii.gz``; nibabel is
imported only there.
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
from pathlib import Path

import numpy as np

from helmholtz_pinn.errors import InputError, MissingDependencyError, OutputError


def prepare_dir(out: str | Path) -> Path:
    """Create ``out`` (and parents) and check it is writable; clear error otherwise."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputError(f"cannot create output folder {out}: {err.strerror}") from None
    if not out.is_dir() or not os.access(out, os.W_OK):
        raise OutputError(f"output folder {out} is not a writable directory")
    return out


def result_dirs(out: Path, paths: list[Path]) -> list[Path]:
    """OUT/<stem> per input file of a batched fit; the index is prefixed when stems repeat."""
    stems = [Path(p).name.removesuffix(".npz") for p in paths]
    if len(set(stems)) < len(stems):
        stems = [f"{i}_{s}" for i, s in enumerate(stems)]
    return [Path(out) / s for s in stems]


def _plain(value):
    """JSON-safe: NaN/Inf become None, numpy scalars become Python numbers."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# Files a run writes into OUT (Result.save, a diverged fit's report); the NIfTI maps go
# into OUT/maps/. A new result clears them first, so nothing of an earlier run is left
# beside it (user files in OUT are not touched).
RESULT_FILES = (
    "mu.npz",
    "metrics.json",
    "history.csv",
    "config.json",
    "wave.png",
    "modulus.png",
    "loss.png",
    "misfit.png",
    "uncertainty.png",
    "failure.json",
)


def clear_results(out: Path) -> list[str]:
    """Delete an earlier run's :data:`RESULT_FILES` and ``maps/*.nii.gz`` in ``out``;
    returns their names."""
    found = _result_paths(out)
    for path in found:
        path.unlink()
    return [str(p.relative_to(out)) for p in found]


def _result_paths(out: Path) -> list[Path]:
    """The :data:`RESULT_FILES` and ``maps/*.nii.gz`` in ``out``."""
    found = [out / name for name in RESULT_FILES if (out / name).is_file()]
    return found + sorted((out / "maps").glob("*.nii.gz"))


@contextlib.contextmanager
def writing(out: Path):
    """Within: an OSError while writing into ``out`` (disk full, a read-only file system)
    becomes one :class:`OutputError` line naming the file and what survives."""
    try:
        yield
    except OutputError:
        raise
    except OSError as err:
        what = err.strerror or str(err)
        raise OutputError(
            f"cannot write the results into {out}: {what} ({err.filename or 'a result file'}); "
            "free space (or use another output folder) and run again: with checkpoints, "
            "resume=True writes the results without training again"
        ) from None


STAGE = ".writing"  # OUT/.writing/: a result being written, moved into OUT when whole
MARKER = "complete.json"  # OUT/.writing/complete.json: the stage's files, written last
LAST = "metrics.json"  # out of OUT first and into it last: a folder with it holds a whole result
EARLIER = ".earlier"  # OUT/.writing/.earlier/: the earlier result, set aside during a swap
# the folders a run writes in OUT (maps: the NIfTI maps; checkpoints and what a fresh run
# sets aside; the stage): a file of one of these names is in the way
SUBFOLDERS = ("maps", "checkpoints", "checkpoints.previous", STAGE)


@contextlib.contextmanager
def staged(out: Path):
    """Write a result into ``OUT/.writing/`` (yielded); when every file is written, their
    list is written last into ``OUT/.writing/complete.json`` (the marker) and the
    result is moved into ``out`` (:func:`_swap`). A write that fails (a full disk, an
    error) removes the stage and leaves the earlier result as it was. A stage that a
    killed run left is finished first (:func:`finish_swap`).

    What a reader can rely on: ``out`` with ``metrics.json`` holds one whole result
    (the earlier one until the swap starts, the new one once it is done); without it a
    swap was stopped half-way, and the next command into ``out`` (or ``save``) finishes
    it. A swap that fails (an error, not a kill) puts the earlier result back. Renames
    are atomic against a killed process, not against a power cut (nothing is fsynced)."""
    import shutil

    stage = _stage(out)
    try:
        stage.mkdir()
        yield stage
        names = sorted(p.relative_to(stage).as_posix() for p in stage.rglob("*") if p.is_file())
        write_json(stage / MARKER, {"files": names})  # atomic: whole or absent
        _check_room(out, names)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    _swap(out, stage, names)


@contextlib.contextmanager
def added(out: Path):
    """Add files to the result already in ``out`` (the figures, drawn once ``mu.npz`` and
    ``metrics.json`` are in place): they are written into ``OUT/.writing/`` (yielded), then
    each is renamed into ``out`` (whole or absent). A failure removes the stage and leaves
    ``out`` as it was, its maps and facts whole; an OSError (a full disk) becomes an
    :class:`OutputError` that says so. A kill leaves a stage without a marker, which the
    next command into ``out`` removes (:func:`finish_swap`)."""
    import shutil

    stage = _stage(out)
    try:
        stage.mkdir()
        yield stage
        for path in sorted(p for p in stage.rglob("*") if p.is_file()):
            name = path.relative_to(stage)
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            path.replace(out / name)
    except OSError as err:
        raise OutputError(
            f"cannot write the figures into {out}: {err.strerror or err} "
            f"({err.filename or 'a figure'}); the maps and facts (mu.npz, metrics.json) are "
            "written: free space and run again to draw the figures"
        ) from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _stage(out: Path) -> Path:
    """``OUT/.writing``, not yet made, once a stage a killed run left in ``out`` is
    finished (:func:`finish_swap`) and its folders are checked (:func:`check_folders`)."""
    finish_swap(out)
    check_folders(out)
    return out / STAGE


def _check_room(out: Path, names: list[str]) -> None:
    """Refuse (:class:`OutputError`) a result whose file ``names`` (relative to ``out``)
    cannot be moved in: a file where a folder of theirs goes (``OUT/maps`` a file), or a
    folder where a file goes. Checked before anything in ``out`` is touched."""
    for name in names:
        parts = Path(name).parts
        for i in range(1, len(parts)):
            folder = out.joinpath(*parts[:i])
            if folder.exists() and not folder.is_dir():
                raise OutputError(
                    f"{folder} is a file where the results need a folder (for {name}): "
                    "move it away or choose another output folder; nothing was replaced"
                )
        if (out / name).is_dir():
            raise OutputError(
                f"{out / name} is a folder where the results write a file: move it away or "
                "choose another output folder; nothing was replaced"
            )


def _swap(out: Path, stage: Path, names: list[str]) -> None:
    """Move the staged files ``names`` (paths relative to ``stage``) into ``out``: first
    the earlier result's files are moved aside into ``OUT/.writing/.earlier/``
    (``metrics.json`` first), then the new files are renamed in with ``metrics.json``
    last, then the stage is deleted. Repeated after a kill at any point, it ends the
    same (rolled forward): new files already moved in are kept. An error (not a kill)
    puts the earlier result back (:func:`_roll_back`) and raises :class:`OutputError`."""
    import shutil

    earlier = stage / EARLIER
    try:
        for path in sorted(_result_paths(out), key=lambda p: p.name != LAST):
            name = path.relative_to(out).as_posix()
            if name in names and not (stage / name).exists():
                continue  # the new file, moved in before a kill
            (earlier / name).parent.mkdir(parents=True, exist_ok=True)
            path.replace(earlier / name)
        for name in sorted(names, key=lambda n: n == LAST):
            if (stage / name).is_file():
                (out / name).parent.mkdir(parents=True, exist_ok=True)
                (stage / name).replace(out / name)
    except OSError as err:
        kept = _roll_back(out, stage, names)
        what = err.strerror or str(err)
        raise OutputError(
            f"cannot move the new result into {out}: {what} ({err.filename or 'a file'}); "
            + (
                "the earlier result is back in place"
                if kept
                else f"the next command into {out} finishes the move"
            )
        ) from None
    shutil.rmtree(stage, ignore_errors=True)


def _roll_back(out: Path, stage: Path, names: list[str]) -> bool:
    """Undo a failed :func:`_swap`: the new files moved in go back to the stage, the
    earlier ones come back from ``.earlier`` (``metrics.json`` last), the stage is
    deleted. Whether that worked (else the stage stays, to be rolled forward)."""
    import shutil

    earlier = stage / EARLIER
    try:
        for name in names:
            if (out / name).is_file() and not (stage / name).exists():
                (out / name).replace(stage / name)
        back = [p for p in earlier.rglob("*") if p.is_file()] if earlier.is_dir() else []
        for path in sorted(back, key=lambda p: p.name == LAST):
            name = path.relative_to(earlier)
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            path.replace(out / name)
    except OSError:
        return False
    shutil.rmtree(stage, ignore_errors=True)
    return True


def finish_swap(out: Path) -> str | None:
    """Finish what a run killed while writing a result into ``out`` left in
    ``OUT/.writing/``: with the marker (every file was written) the swap is completed,
    rolled forward; without it the stage is deleted, rolled back (the earlier result was
    not touched yet). Returns a one-line note, or None when there was no stage (or an
    empty one, removed)."""
    import shutil

    stage = out / STAGE
    if not stage.is_dir():
        return None
    if not any(p.is_file() for p in stage.rglob("*")):  # a clean-up cut short: nothing to say
        shutil.rmtree(stage, ignore_errors=True)
        return None
    try:
        names = list(json.loads((stage / MARKER).read_text())["files"])
    except (OSError, ValueError, KeyError, TypeError):
        figures = all(p.suffix == ".png" for p in stage.rglob("*") if p.is_file())
        shutil.rmtree(stage, ignore_errors=True)
        if figures and (out / LAST).is_file():  # stopped in added(): the maps were in place
            return (
                f"{out}: removed the figures of a run stopped while drawing them ({stage}); "
                "its maps and facts (mu.npz, metrics.json) are whole"
            )
        return (
            f"{out}: removed the unfinished result of a run stopped while writing it "
            f"({stage}); the earlier result was not touched"
        )
    _check_room(out, names)
    _swap(out, stage, names)
    return f"{out}: finished moving in the new result that a stopped run left half-moved"


def finish_swaps(out: Path) -> list[str]:
    """:func:`finish_swap` in ``out`` and each folder in it (a batch's ``OUT/<stem>/``);
    the notes. Run at the start of every command that writes into ``out``, once its
    folder lock is held."""
    folders = [out, *sorted(p.parent for p in Path(out).glob(f"*/{STAGE}"))]
    return [note for folder in folders if (note := finish_swap(folder))]


def check_folders(out: Path, names: tuple[str, ...] = (STAGE,)) -> None:
    """Refuse (:class:`OutputError`) a file in ``out`` named like one of the folders
    ``names`` that a run writes there (:data:`SUBFOLDERS`)."""
    for name in names:
        path = Path(out) / name
        if path.exists() and not path.is_dir():
            raise OutputError(
                f"{path} is a file, but a run writes a folder of that name there: move it "
                "away or choose another output folder"
            )


def check_output(out: Path, *, nifti: bool = False, checkpoints: bool = False) -> None:
    """What makes writing a result into ``out`` fail, found before any work: a name that
    is not UTF-8 (the results name their folder in JSON and on the terminal), a file
    where a run writes a folder (``OUT/.writing``, with ``nifti`` ``OUT/maps``, with
    ``checkpoints`` ``OUT/checkpoints`` and ``OUT/checkpoints.previous``) or a folder where
    it writes a result file. Raises :class:`OutputError` with one line."""
    text = str(out)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raw = os.fsencode(text)
        raise OutputError(
            f"the output folder name {raw!r} is not valid UTF-8: choose a name in UTF-8"
        ) from None
    names = (STAGE,) + (("maps",) if nifti else ()) + (SUBFOLDERS[1:3] if checkpoints else ())
    check_folders(out, names)
    for name in (*RESULT_FILES, "failure.json"):
        if (Path(out) / name).is_dir():
            raise OutputError(
                f"{Path(out) / name} is a folder, but a run writes a file of that name "
                "there: move it away or choose another output folder"
            )


def checkpoint_steps(out: Path) -> list[Path]:
    """The checkpoint step folders of earlier runs in ``out``: ``OUT/checkpoints/<step>``
    and below (a law's or a chunk's folder), and those set aside in ``*.previous``."""
    folders = [Path(out) / "checkpoints", Path(out) / "checkpoints.previous"]
    found = []
    for top in folders:
        if top.is_dir():
            found += [
                p
                for p in top.rglob("*")
                if p.is_dir() and p.name.isdigit()
                and not any(q.name.isdigit() for q in p.relative_to(top).parents if q.name)
            ]  # fmt: skip
    return sorted(found)


def write_npz(path: Path, **arrays) -> None:
    """``np.savez`` into ``path`` atomically (temp file then rename): a failed write
    leaves no truncated ``.npz``."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        with tmp.open("wb") as fh:
            np.savez(fh, **arrays)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def write_json(path: Path, data: dict) -> None:
    """Write ``data`` as indented JSON, atomically (temp file then rename)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(_plain(data), indent=2, sort_keys=True))
    tmp.replace(path)


def write_history(path: Path, history: list[dict]) -> None:
    """``history.csv``: one row per block of a single fit, one row per block and member of
    a batched one; every cell a plain number.

    A single fit's records hold numbers: the columns are the record's keys (``step``,
    ``time_s``, ``lr``, block-mean ``loss``, ``data``, ``pde``, last-step ``last_loss``,
    ``last_data``, ``last_pde``, ``retries``). A batched fit (an ensemble, several files,
    a slicewise volume) holds one list per member in ``lr``, the losses and ``retries``:
    then a ``member`` column follows ``step`` and each block gives one row per member,
    the list entries of that member, the shared values (``step``, ``time_s``) repeated.
    ``member`` counts the rows of the fit this result holds: ensemble members, and for a
    slicewise fit ``slice * ensemble + ensemble member`` over the fitted (non-empty)
    z-slices in order. Select one member with e.g. ``df[df.member == 0]`` (pandas).
    """
    if not history:
        return
    keys = list(history[0])
    sizes = {len(v) for r in history for v in r.values() if isinstance(v, (list, tuple))}
    if len(sizes) > 1:
        raise OutputError(f"history records hold lists of different lengths {sorted(sizes)}")
    rows = history
    if sizes:
        n = sizes.pop()
        keys.insert(1, "member")
        rows = [
            {"member": m, **{k: v[m] if isinstance(v, (list, tuple)) else v for k, v in r.items()}}
            for r in history
            for m in range(n)
        ]
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)


def nifti_affine(spacing_m: np.ndarray, affine: np.ndarray | None = None) -> np.ndarray:
    """The 4x4 voxel-to-world affine in mm of a 2-D or 3-D grid with ``spacing_m`` (m).

    Without ``affine``: ``diag(dx, dy, dz, 1)`` in mm (no orientation or origin known;
    a 2-D grid, written as one slice, takes ``dz = dx``). With ``affine`` (4x4, mm, e.g.
    :func:`helmholtz_pinn.io.convert.grid_affine` of the NIfTI input): its rotation and
    origin, each column rescaled to the grid's spacing, so the header's zooms always
    equal the dataset's spacing.
    """
    mm = np.ravel(np.asarray(spacing_m, dtype=np.float64)) * 1e3
    if mm.size == 2:
        mm = np.append(mm, mm[0])
    if mm.size != 3 or not np.all(mm > 0):
        raise InputError(f"spacing must be 2 or 3 positive values in m; got {spacing_m!r}")
    if affine is None:
        return np.diag([*mm, 1.0])
    out = np.array(affine, dtype=np.float64)
    norms = np.linalg.norm(out[:3, :3], axis=0) if out.shape == (4, 4) else None
    if norms is None or not np.all(np.isfinite(out)) or not np.all(norms > 0):
        raise InputError(f"affine must be a finite 4x4 matrix (mm); got {np.shape(affine)}")
    out[:3, :3] *= mm / norms
    return out


def write_nifti(
    path: Path,
    volume: np.ndarray,
    spacing_m: np.ndarray,
    *,
    affine: np.ndarray | None = None,
    descrip: str = "",
) -> Path:
    """Write one 2-D or 3-D map as a float32 NIfTI-1 file (``.nii.gz`` compresses).

    A 2-D map ``(nx, ny)`` becomes a ``(nx, ny, 1)`` volume. The qform and sform hold
    :func:`nifti_affine` (code "scanner" with an input ``affine``, else "aligned"),
    ``xyzt_units`` is mm, and ``descrip`` (at most 80 characters) carries the unit of
    the values, which NIfTI has no field for. Boolean maps are written as uint8.

    Raises :class:`~helmholtz_pinn.errors.MissingDependencyError` without nibabel.
    """
    try:
        import nibabel as nib
    except ImportError:
        raise MissingDependencyError(
            "writing NIfTI maps needs nibabel: pip install 'nibabel>=5.0'"
        ) from None
    volume = np.asarray(volume)
    volume = volume.astype(np.uint8 if volume.dtype == bool else np.float32)
    if volume.ndim == 2:
        volume = volume[..., None]
    if volume.ndim != 3:
        raise InputError(f"a NIfTI map must be 2-D or 3-D; got shape {volume.shape}")
    matrix = nifti_affine(spacing_m, affine)
    code = "scanner" if affine is not None else "aligned"
    img = nib.Nifti1Image(volume, matrix)
    img.set_qform(matrix, code=code)
    img.set_sform(matrix, code=code)
    img.header.set_xyzt_units("mm", "sec")
    img.header["descrip"] = descrip[:80].encode("ascii", "replace")
    try:
        nib.save(img, path)
    except OSError as err:
        raise OutputError(f"cannot write {path}: {err.strerror or err}") from None
    return path


def write_nifti_maps(
    out: Path,
    maps: dict[str, tuple[np.ndarray, str]],
    spacing_m: np.ndarray,
    *,
    affine: np.ndarray | None = None,
) -> list[Path]:
    """``OUT/maps/<stem>.nii.gz`` for each ``{stem: (map, descrip)}`` (see
    :func:`write_nifti`); returns the paths written."""
    folder = prepare_dir(Path(out) / "maps")
    return [
        write_nifti(folder / f"{stem}.nii.gz", volume, spacing_m, affine=affine, descrip=text)
        for stem, (volume, text) in maps.items()
    ]
