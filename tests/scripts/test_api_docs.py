"""docs/api-reference.md is what scripts/api_docs.py makes of the docstrings now, and the
public functions document their arguments in one style (an ``Args:`` section naming each)."""

import importlib.util
import inspect
import re
from pathlib import Path

import pytest

import helmholtz_pinn as hp

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("api_docs", ROOT / "scripts" / "api_docs.py")
api_docs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(api_docs)


def test_the_committed_reference_is_up_to_date():
    assert (ROOT / "docs" / "api-reference.md").read_text() == api_docs.render(), (
        "docs/api-reference.md is out of date: run python scripts/api_docs.py"
    )


def documented_args(doc: str) -> set[str]:
    """The names an ``Args:`` section gives (``a, b: ...`` gives both)."""
    match = re.search(r"^Args:\n((?:[ \t]+.*\n?|\n)+)", doc, re.M)
    if match is None:
        return set()
    lines = [x for x in match.group(1).splitlines() if x.strip()]
    base = min(len(x) - len(x.lstrip()) for x in lines)
    heads = [x.strip().split(":")[0] for x in lines if len(x) - len(x.lstrip()) == base]
    return {n.strip().lstrip("*") for h in heads for n in h.split(",")}


FUNCTIONS = sorted(
    n for n in hp.__all__ if inspect.isfunction(getattr(hp, n)) and getattr(hp, n).__name__ == n
)


@pytest.mark.parametrize("name", FUNCTIONS + ["baseline"])
def test_public_functions_name_every_argument_under_args(name):
    fn = getattr(hp, name)
    params = set(inspect.signature(fn).parameters)
    missing = params - documented_args(inspect.getdoc(fn) or "")
    assert not missing, f"hp.{name}'s docstring has no Args entry for {sorted(missing)}"
