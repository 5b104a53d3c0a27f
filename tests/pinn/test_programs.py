"""Programs kept on disk (:mod:`helmholtz_pinn.pinn.programs`): a second Program of the same
key loads the executable without tracing and gives the same bits; another key, argument
shape or matmul precision is another entry; a damaged entry is compiled again; inside a
transformation the function is traced as ``jax.jit`` would."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from helmholtz_pinn.pinn import programs


@pytest.fixture
def store(tmp_path):
    before = jax.config.jax_compilation_cache_dir
    jax.config.update("jax_compilation_cache_dir", str(tmp_path))
    yield tmp_path / programs.FOLDER
    jax.config.update("jax_compilation_cache_dir", before)


@pytest.fixture
def counted():
    counts = {"traced": 0, programs.LOADED: 0, programs.STORED: 0}

    def event(name, **kwargs):
        if name in counts:
            counts[name] += 1

    def duration(name, seconds, **kwargs):
        if name == "/jax/core/compile/jaxpr_trace_duration":
            counts["traced"] += 1

    jax.monitoring.register_event_listener(event)
    jax.monitoring.register_event_duration_secs_listener(duration)
    yield counts
    jax.monitoring.unregister_event_listener(event)
    jax.monitoring.unregister_event_duration_listener(duration)


def _net(scale):
    def fn(w, x):
        return {"y": jnp.tanh(x @ w) * scale, "n": jnp.sum(x)}

    return fn


ARGS = (jnp.linspace(-1.0, 1.0, 16).reshape(4, 4), jnp.arange(12.0).reshape(3, 4))


def test_a_second_program_of_the_key_loads_the_same_executable_untraced(store, counted):
    first = programs.Program(_net(2.0), key=("test", 2.0))
    a = first(*ARGS)
    assert counted[programs.STORED] == 1 and len(list(store.glob("*.bin"))) == 1
    traced = counted["traced"]

    again = programs.Program(_net(2.0), key=("test", 2.0))  # as a new process would build it
    b = again(*ARGS)
    assert counted[programs.LOADED] == 1 and counted["traced"] == traced  # not traced
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    again(*ARGS)  # held in memory now
    assert counted[programs.LOADED] == 1 and again.cache_size() == 1


def test_another_key_shape_or_precision_is_another_entry(store, counted):
    programs.Program(_net(2.0), key=("test", 2.0))(*ARGS)
    programs.Program(_net(3.0), key=("test", 3.0))(*ARGS)  # another static key
    programs.Program(_net(2.0), key=("test", 2.0))(ARGS[0], ARGS[1][:2])  # another shape
    with jax.default_matmul_precision("float32"):
        programs.Program(_net(2.0), key=("test", 2.0))(*ARGS)  # another precision setting
    assert counted[programs.LOADED] == 0 and counted[programs.STORED] == 4
    assert len(list(store.glob("*.bin"))) == 4


def test_a_damaged_entry_is_compiled_again(store, counted):
    want = programs.Program(_net(2.0), key=("test", 2.0))(*ARGS)
    (entry,) = store.glob("*.bin")
    entry.write_bytes(b"not an executable")
    got = programs.Program(_net(2.0), key=("test", 2.0))(*ARGS)
    assert counted[programs.LOADED] == 0 and counted[programs.STORED] == 2
    np.testing.assert_array_equal(np.asarray(got["y"]), np.asarray(want["y"]))


def test_inside_a_transformation_it_is_traced_as_jit_and_without_a_cache_nothing_is_stored(
    tmp_path, counted
):
    before = jax.config.jax_compilation_cache_dir
    jax.config.update("jax_compilation_cache_dir", None)
    try:
        program = programs.Program(_net(2.0), key=("test", 2.0))
        stacked = jax.vmap(program, in_axes=(None, 0))(ARGS[0], jnp.stack([ARGS[1]] * 2))
        assert stacked["y"].shape == (2, 3, 4) and program.cache_size() == 0
        program(*ARGS)
        assert counted[programs.STORED] == 0 and program.cache_size() == 1
    finally:
        jax.config.update("jax_compilation_cache_dir", before)
