"""Shared tiny inversion settings for fast CPU tests (a few seconds per fit)."""

SMALL = dict(
    width=16,
    depth=2,
    mu_width=8,
    mu_depth=1,
    n_features=8,
    batch_size=64,
    sync_interval=5,
    steps=10,
    pde_warmup=3,
    mu_ref=3000.0,
)
