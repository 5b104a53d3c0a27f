"""The compile cache serves every program of a second run: two tiny ``helmholtz-pinn
invert`` processes share one ``--cache-dir``; the second, on other data of the same shapes
with another seed and learning rate, compiles nothing that the cache does not serve, and
the fit's own programs (:mod:`helmholtz_pinn.pinn.programs`) are loaded without being
traced (JAX's monitoring events count the programs compiled, traced, the requests to the
persistent cache and its hits, and the programs stored and loaded). The fit has an L-BFGS
phase, whose program is compiled ahead in a thread."""

import json
import subprocess
import sys

from settings import plane_wave_dataset

from helmholtz_pinn.io import dataset as datasets

# Run in a fresh process: the CLI with JAX's event listeners counting every XLA program
# (each goes through the backend-compile event), each request to the persistent cache and
# each hit; the programs the cache missed are named from JAX's debug log.
COUNTED_CLI = """
import json, logging, sys
import jax.monitoring as monitoring
from helmholtz_pinn.cli.commands import main

counts = {"programs": 0, "traced": 0, "requests": 0, "hits": 0, "stored": 0, "loaded": 0,
          "missed": []}
EVENTS = {"/jax/compilation_cache/compile_requests_use_cache": "requests",
          "/jax/compilation_cache/cache_hits": "hits",
          "/helmholtz_pinn/programs/stored": "stored",
          "/helmholtz_pinn/programs/loaded": "loaded"}

def event(name, **kwargs):
    if name in EVENTS:
        counts[EVENTS[name]] += 1

def duration(name, seconds, **kwargs):
    if name == "/jax/core/compile/backend_compile_duration":
        counts["programs"] += 1
    if name == "/jax/core/compile/jaxpr_trace_duration":
        counts["traced"] += 1

class Missed(logging.Handler):
    def emit(self, record):
        if "PERSISTENT COMPILATION CACHE MISS" in record.getMessage():
            counts["missed"].append(record.args[0])

monitoring.register_event_listener(event)
monitoring.register_event_duration_secs_listener(duration)
log = logging.getLogger("jax._src.compiler")
log.setLevel(logging.DEBUG)
log.addHandler(Missed())
status = main(sys.argv[1:])
print("COUNTS " + json.dumps(counts))
sys.exit(status)
"""

TINY = (
    "--steps 20 --sync-interval 10 --lbfgs-from 10 --lbfgs-steps 2 --width 16 --depth 2 "
    "--mu-width 8 --mu-depth 1 --n-features 8 --batch-size 64 --pde-warmup 5 --mu-model voigt "
    "--no-progress --no-checkpoints"
).split()


def _counted_invert(data, out, cache, *extra) -> dict:
    args = ["invert", str(data), "--out", str(out), "--cache-dir", str(cache), *TINY, *extra]
    proc = subprocess.run(
        [sys.executable, "-c", COUNTED_CLI, *args], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    line = next(s for s in proc.stdout.splitlines() if s.startswith("COUNTS "))
    return json.loads(line.removeprefix("COUNTS "))


def test_a_second_run_compiles_nothing_that_the_cache_does_not_serve(tmp_path):
    first, second = tmp_path / "first.npz", tmp_path / "second.npz"
    datasets.save(plane_wave_dataset(n=10), first)
    datasets.save(plane_wave_dataset(n=10, g=2500.0, eta=2.0), second)  # other scales
    cache = tmp_path / "cache"

    empty = _counted_invert(first, tmp_path / "a", cache)
    assert empty["programs"] >= 5 and empty["hits"] == empty["loaded"] == 0
    assert empty["requests"] == empty["programs"]  # no program bypasses the cache
    # the fit's own: initialisation, Adam block, L-BFGS phase, law judgement, map on the grid
    assert empty["stored"] >= 5

    warm = _counted_invert(second, tmp_path / "b", cache, "--seed", "7", "--learning-rate", "3e-3")
    assert warm["missed"] == [], f"compiled again, not served by the cache: {warm['missed']}"
    assert warm["loaded"] == empty["stored"] and warm["stored"] == 0
    assert warm["hits"] == warm["requests"] == warm["programs"]
    assert warm["programs"] + warm["loaded"] == empty["programs"]
    assert warm["traced"] <= empty["traced"] - empty["stored"]  # the loaded ones: not traced
