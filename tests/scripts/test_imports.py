"""scripts/ reaches the package through its public API and ``helmholtz_pinn.lab`` only, and
every name that ``lab`` promises resolves (where an internal moved, ``lab`` says which)."""

import ast
from pathlib import Path

import pytest

import helmholtz_pinn
from helmholtz_pinn import lab

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def package_imports(path: Path) -> list[tuple[str, str | None]]:
    """(module, name) of every import of the package in a file: ``import helmholtz_pinn.x``
    gives (``helmholtz_pinn.x``, None), ``from m import a`` gives (m, "a")."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(a.name, None) for a in node.names if a.name.startswith("helmholtz_pinn")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("helmholtz_pinn"):
            found += [(node.module, a.name) for a in node.names]
    return found


def allowed(module: str, name: str | None) -> bool:
    if module == "helmholtz_pinn":
        return name is None or name == "lab" or name in helmholtz_pinn.__all__
    if module == "helmholtz_pinn.lab":
        return name is None or name in lab.__all__
    return False


def test_rule_tells_public_from_internal(tmp_path):
    """The check itself: a deep import is refused, the face and lab's names are not."""
    code = (
        "import helmholtz_pinn as hp\nfrom helmholtz_pinn import invert, lab\n"
        "from helmholtz_pinn.lab import prepare\nfrom helmholtz_pinn.pinn import train\n"
        "def f():\n    from helmholtz_pinn.lab import no_such_name\n"
    )
    (tmp_path / "s.py").write_text(code)
    bad = [i for i in package_imports(tmp_path / "s.py") if not allowed(*i)]
    assert bad == [("helmholtz_pinn.pinn", "train"), ("helmholtz_pinn.lab", "no_such_name")]


@pytest.mark.parametrize("path", sorted(SCRIPTS.glob("*.py")), ids=lambda p: p.name)
def test_scripts_import_only_the_public_api_and_lab(path):
    bad = [
        f"{m}{'' if n is None else ':' + n}" for m, n in package_imports(path) if not allowed(m, n)
    ]
    assert not bad, f"{path.name} imports internals {bad}: add them to helmholtz_pinn/lab.py"


@pytest.mark.parametrize("path", sorted(SCRIPTS.glob("*.py")), ids=lambda p: p.name)
def test_scripts_use_only_names_the_api_and_lab_have(path):
    """``hp.X`` and ``lab.X`` in a script name something ``helmholtz_pinn`` or ``lab`` has."""
    face = {"__all__", "__version__"}
    has = {"hp": set(helmholtz_pinn.__all__) | face, "lab": set(lab.__all__) | face}
    used = {
        (node.value.id, node.attr)
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
    }
    unknown = sorted(f"{a}.{n}" for a, n in used if a in has and n not in has[a])
    assert not unknown, f"{path.name} uses {unknown}"


def test_every_lab_name_resolves():
    missing = []
    for name in lab.__all__:
        try:
            getattr(lab, name)
        except (AttributeError, ImportError) as err:
            missing.append(f"{name}: {err}")
    assert not missing, missing
