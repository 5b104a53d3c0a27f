"""The package's layout: each module imports only its own layer and the layers listed before
it in ``helmholtz_pinn.LAYERS``, and no modules import each other in a circle."""

import ast
from pathlib import Path

import helmholtz_pinn

PACKAGE = Path(helmholtz_pinn.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Package modules a file imports (top level or inside functions), as dotted names."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("helmholtz_pinn."):
                found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("helmholtz_pinn."))
    modules = {_module_name(p) for p in PACKAGE.rglob("*.py")}
    return {name for name in found if name in modules}


def _layer(module: str) -> int:
    return helmholtz_pinn.LAYERS.index(module.split(".")[1])


def _graph() -> dict[str, set[str]]:
    return {
        _module_name(p): _imports(p) - {_module_name(p)}
        for p in PACKAGE.rglob("*.py")
        if p != PACKAGE / "__init__.py"
    }


def test_every_module_belongs_to_a_layer():
    for module in _graph():
        assert module.split(".")[1] in helmholtz_pinn.LAYERS, module


def test_layers_import_only_layers_before_them():
    for module, deps in _graph().items():
        for dep in deps:
            assert _layer(dep) <= _layer(module), f"{module} imports {dep}, a later layer"


def test_no_import_circle():
    graph = _graph()
    done, active = set(), []

    def visit(node):
        if node in active:
            raise AssertionError("import circle: " + " -> ".join(active[active.index(node) :]))
        if node in done:
            return
        active.append(node)
        for dep in graph.get(node, ()):
            if dep != node.rsplit(".", 1)[0]:  # a module may import its own package's face
                visit(dep)
        active.pop()
        done.add(node)

    for module in graph:
        visit(module)
