"""GEMM rates for the step's shapes: JAX float32 highest (Triton and cuBLAS), X3, and torch fp32."""
import json, sys, time, os
import numpy as np
import jax, jax.numpy as jnp
shapes = [(400000, 128, 128), (8192, 256, 256), (8192, 128, 256), (40960, 512, 512), (800, 128, 128)]
def bench(f, *a, n=50):
    r = f(*a); r.block_until_ready()
    t = time.perf_counter()
    for _ in range(n): r = f(*a)
    r.block_until_ready()
    return (time.perf_counter() - t) / n * 1e6
prec = sys.argv[1] if len(sys.argv) > 1 else "highest"
for m, k, n in shapes:
    a = jax.random.normal(jax.random.PRNGKey(0), (m, k)); w = jax.random.normal(jax.random.PRNGKey(1), (k, n))
    p = jax.lax.Precision.HIGHEST if prec == "highest" else prec
    f = jax.jit(lambda a, w: jnp.dot(a, w, precision=p) if prec == "highest" else jnp.dot(a, w, precision=None))
    if prec != "highest":
        with jax.default_matmul_precision(prec):
            f = jax.jit(lambda a, w: jnp.dot(a, w)).lower(a, w).compile()
    us = bench(f, a, w)
    print(json.dumps(dict(impl="jax", flags=os.environ.get("XLA_FLAGS", ""), prec=prec, m=m, k=k, n=n, us=us, tflops=2*m*k*n/us/1e6)), flush=True)
