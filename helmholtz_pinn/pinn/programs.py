"""Compiled programs kept on disk between processes, so that a second run neither traces
nor lowers them.

JAX's persistent compile cache (:mod:`helmholtz_pinn.fit.compile_cache`) is keyed by the
lowered program, so a warm run still traces every function and lowers it to StableHLO
before the cache can answer (docs/performance.md). A :class:`Program` keys
its compiled executable by what decides the program instead: the factory that built the
function and the factory's arguments (the spec, the step count, ...), the arguments'
shapes, dtypes and placement, the matmul precision in effect, the XLA flags, the
backend and device kind, the versions of JAX, jaxlib, flax and optax, and a digest of
this package's source. A hit loads the executable XLA compiled before (the same bits,
so the same result); a miss lowers and compiles as ``jax.jit`` would (through the
persistent cache) and stores it. The store is the ``programs`` folder inside JAX's
compile-cache folder, and is off where that cache is off.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import logging
import os
import pickle
import threading
from pathlib import Path
from typing import Any

import jax

log = logging.getLogger(__name__)

FOLDER = "programs"  # inside jax_compilation_cache_dir
ENABLED = True  # False: the store is off (every program is traced and lowered as by jax.jit)
LOADED = "/helmholtz_pinn/programs/loaded"  # jax.monitoring events, one per program
STORED = "/helmholtz_pinn/programs/stored"
_PACKAGE = Path(__file__).resolve().parents[1]


def stored(factory):
    """Decorator of a factory ``f(*static) -> Program``: the factory is cached on its
    arguments (as ``functools.lru_cache``) and its Program keyed by the factory's
    qualified name and arguments, which must decide everything the function closes
    over."""

    @functools.lru_cache(maxsize=32)
    def build(*static):
        program = factory(*static)
        program.key = (f"{factory.__module__}.{factory.__qualname__}", *static)
        return program

    return functools.wraps(factory)(build)


class Program:
    """``fn`` jitted with XLA ``compiler_options``, its compiled executables kept per
    argument signature in memory and, with ``key`` (the static part of the key:
    :func:`stored`) and on one device, on disk (module docstring). Called like the
    jitted function; inside a transformation (vmap, an enclosing jit) it is the jitted
    function."""

    def __init__(
        self, fn, compiler_options: dict | None = None, key: tuple | None = None, **jit_args
    ):
        self.fn = fn
        self.jit_args = dict(jit_args, compiler_options=dict(compiler_options or {}))
        self.jitted = jax.jit(fn, **self.jit_args)
        self.key = key
        self._compiled: dict[str, Any] = {}
        self._lock = threading.Lock()

    def __call__(self, *args):
        if any(isinstance(a, jax.core.Tracer) for a in jax.tree.leaves(args)):
            return self.jitted(*args)
        return self.compiled(*args)(*args)

    def cache_size(self) -> int:
        """The executables held in memory: one per argument signature called."""
        return len(self._compiled)

    def lower(self, *args):
        """The jitted function lowered for ``args`` (arrays or ShapeDtypeStructs)."""
        return self.jitted.lower(*args)

    def compiled(self, *args):
        """The executable for ``args`` (arrays or ShapeDtypeStructs): from memory, from
        the store, or lowered, compiled and stored."""
        signature = _signature(args)
        found = self._compiled.get(signature)
        if found is not None:
            return found
        with self._lock:
            found = self._compiled.get(signature)
            if found is None:
                found = self._compiled[signature] = self._load_or_compile(signature, args)
        return found

    def _load_or_compile(self, signature: str, args):
        device = _device(args)
        digest = self._digest(signature) if device is not None else None
        path = None
        if digest is not None:
            path = Path(jax.config.jax_compilation_cache_dir).expanduser() / FOLDER
            path = path / f"{digest}.bin"
            if path.is_file():
                loaded = _load(path, device)
                if loaded is not None:
                    jax.monitoring.record_event(LOADED)
                    return loaded
        compiled = self._jit(digest).lower(*args).compile()
        if path is not None and _save(path, compiled):
            jax.monitoring.record_event(STORED)
        return compiled

    def _digest(self, signature: str) -> str | None:
        if not ENABLED or self.key is None or not jax.config.jax_compilation_cache_dir:
            return None
        text = repr((self.key, signature, _environment()))
        return hashlib.sha256(text.encode()).hexdigest()[:40]

    def _jit(self, digest: str | None):
        """The jitted function, named after ``digest`` where it is stored: every stored
        executable has its own module name (on a CPU, two loaded executables of one
        name in one process mix up their functions)."""
        if digest is None:
            return self.jitted

        @functools.wraps(self.fn)
        def named(*args):
            return self.fn(*args)

        base = getattr(self.fn, "__name__", None) or getattr(self.fn, "func", _fn).__name__
        named.__name__ = named.__qualname__ = f"{base}_{digest[:12]}"
        return jax.jit(named, **self.jit_args)


def _fn():  # the name of a function that has none
    pass


def _signature(args) -> str:
    """The argument tree, each leaf's shape, dtype, weak type and sharding, and the
    tracing settings in effect (matmul precision, 64-bit mode)."""
    leaves, tree = jax.tree.flatten(args)
    avals = [
        (
            tuple(getattr(a, "shape", ())),
            str(getattr(a, "dtype", type(a).__name__)),
            bool(getattr(a, "weak_type", isinstance(a, (int, float, complex)))),
            str(getattr(a, "sharding", None)),
        )
        for a in leaves
    ]
    settings = (jax.config.jax_default_matmul_precision, jax.config.jax_enable_x64)
    return repr((str(tree), avals, settings))


def _device(args):
    """The one device every placed argument is on (unplaced ones go to the default
    device); None where they are on several."""
    devices = set()
    for a in jax.tree.leaves(args):
        sharding = getattr(a, "sharding", None)
        if sharding is not None:
            devices |= set(sharding.device_set)
    if len(devices) > 1:
        return None
    if devices:
        return devices.pop()
    default = jax.config.jax_default_device
    return default if isinstance(default, jax.Device) else jax.devices(default)[0]


@functools.lru_cache(maxsize=1)
def _environment() -> tuple:
    """What decides a program besides its key and arguments: library versions, XLA
    flags, backend and device kind, and a digest of this package's source."""
    versions = {}
    for name in ("jax", "jaxlib", "flax", "optax", "numpy"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    device = jax.devices()[0]
    source = hashlib.sha256()
    for path in sorted(_PACKAGE.rglob("*.py")):
        source.update(str(path.relative_to(_PACKAGE)).encode())
        source.update(path.read_bytes())
    return (
        versions,
        os.environ.get("XLA_FLAGS", ""),
        jax.default_backend(),
        device.device_kind,
        getattr(device.client, "platform_version", ""),
        source.hexdigest(),
    )


def _load(path: Path, device):
    """The executable stored in ``path``, loaded onto ``device``; None (and a debug log
    line) where it cannot be read or loaded: the program is then compiled again."""
    try:
        from jax.experimental import serialize_executable

        payload, in_tree, out_tree = pickle.loads(path.read_bytes())
        return serialize_executable.deserialize_and_load(
            payload, in_tree, out_tree, execution_devices=[device]
        )
    except Exception as err:  # a stale or damaged entry costs a compile, nothing else
        log.debug("stored program %s not loaded: %r", path.name, err)
        return None


def _save(path: Path, compiled) -> bool:
    """Write ``compiled`` to ``path`` (a temporary file renamed into place); False where
    it cannot be serialised or the folder cannot be written (it is then left unstored)."""
    try:
        from jax.experimental import serialize_executable

        data = pickle.dumps(serialize_executable.serialize(compiled))
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        partial.write_bytes(data)
        os.replace(partial, path)
        return True
    except Exception as err:
        log.debug("program %s not stored: %r", path.name, err)
        return False
