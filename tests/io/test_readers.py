"""The readers' registry: ``kind="auto"`` picks the reader whose declaration fits the
files, and convert, the dataset loader and the command line take their kinds from it."""

from pathlib import Path

import pytest

from helmholtz_pinn.cli.parser import build_parser
from helmholtz_pinn.errors import DatasetError
from helmholtz_pinn.io import convert, dataset, readers


@pytest.mark.parametrize(
    ("names", "kind"),
    [
        (["scan.MAT"], "mat"),
        (["scan.h5"], "mat"),
        (["wave.nii.gz"], "nifti"),
        (["u_real.nii", "u_imag.nii"], "nifti-complex"),
        (["mag.nii.gz", "phase.nii.gz"], "nifti-polar"),
    ],
)
def test_auto_picks_the_reader_that_fits(names, kind):
    assert readers.reader_for([Path(n) for n in names]).kind == kind


def test_no_reader_fits_and_the_message_names_every_kind():
    with pytest.raises(DatasetError) as err:
        readers.reader_for([Path("phase.nii"), Path("mag.nii")])  # pair in the wrong order
    message = str(err.value)
    assert all(f"'{kind}'" in message for kind in readers.READERS)
    assert "'nifti-polar' (magnitude, phase files)" in message


def test_convert_loader_and_cli_derive_from_the_registry(tmp_path):
    assert convert.KINDS == ("auto", *readers.READERS)
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices["convert"]
    assert next(a for a in sub._actions if a.dest == "kind").choices == convert.KINDS
    for suffix in readers.SUFFIXES:  # every readable ending: the loader says convert it
        path = tmp_path / f"scan{suffix}"
        path.write_bytes(b"")
        with pytest.raises(DatasetError, match="convert it first"):
            dataset.load(path)
