# Two commands that work on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
OUT ?= demo_out
EXTRAS ?= dev

.PHONY: demo test install lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Installed once per set of extras; again only when pyproject.toml changes (or `make clean`).
comma := ,
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[$(EXTRAS)]"
	@touch $@

install: $(STAMP)

# Without a GPU the demo uses smaller networks and fewer steps (--cpu-sized); the library
# defaults are tuned on a GPU, where one fit takes seconds. The law is left to the data
# (two fits). Noisy data (-20 dB) show what the PINN is for: plain AHI, which
# differentiates the noise twice, and smoothed AHI, which blurs the targets, beside it.
# --batch-size 1024 (cpu-sized: 512): at 512 voxels a step the noisy fit stays 4.5 % of the
# field off the data beyond the noise and fails its data_fit check; at 1024, 3.4 %.
# --lbfgs-steps 200: an L-BFGS phase after the 3000 Adam steps (the defaults skip it on
# noisy data): G' 4.6 -> 3.6 %, R 0.88 -> 0.89, for about 20 s more (docs/performance.md).
CPU_DEMO ?= --cpu-sized --batch-size 1024 --lbfgs-steps 200
NOISE_DB ?= -20

## Simulate a noisy four-target phantom; invert it with the PINN, plain and smoothed AHI
demo: $(STAMP)
	@if $(BIN)/python -c "import jax, sys; sys.exit(jax.default_backend() == 'cpu')"; then \
		args=""; else args="$(CPU_DEMO)"; echo "no GPU found: CPU-sized demo ($$args)"; fi; \
	$(BIN)/helmholtz-pinn simulate --phantom four-target --noise-db $(NOISE_DB) --overwrite \
		--out $(OUT)/data.npz && \
	$(BIN)/helmholtz-pinn baseline $(OUT)/data.npz --method ahi --out $(OUT)/ahi --overwrite && \
	$(BIN)/helmholtz-pinn baseline $(OUT)/data.npz --method ahi --smoothing gaussian \
		--out $(OUT)/ahi_smoothed --overwrite && \
	$(BIN)/helmholtz-pinn invert $(OUT)/data.npz --out $(OUT)/pinn --overwrite $$args
	@echo "results in $(OUT)/pinn, $(OUT)/ahi, $(OUT)/ahi_smoothed (mu.npz in Pa, metrics.json, *.png)"

## Install the package with test tools and run the test suite (CPU).
# Two pytest workers (pytest-xdist): on the 2-core CI machine XLA's compiles are mostly
# single-threaded, so a second process fills the other core (docs/performance.md).
# TEST_WORKERS=0 runs the suite in one process.
TEST_WORKERS ?= 2
test: $(STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) tests

lint: $(STAMP)
	$(BIN)/ruff check helmholtz_pinn tests scripts
	$(BIN)/ruff format --check helmholtz_pinn tests scripts

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
