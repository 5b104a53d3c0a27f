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

# Without a GPU the demo uses a smaller network and fewer steps (a few minutes on 2 cores);
# the library defaults are tuned on a GPU, where one fit takes seconds.
# The built-in phantom is Voigt tissue: naming the law spares the CPU the springpot fit that
# the default (--mu-model auto) tries first.
CPU_DEMO ?= --cpu-sized --mu-model voigt

## Simulate the built-in four-target phantom and invert it: figures + metrics in $(OUT)/
demo: $(STAMP)
	@if $(BIN)/python -c "import jax, sys; sys.exit(jax.default_backend() == 'cpu')"; then \
		args=""; else args="$(CPU_DEMO)"; echo "no GPU found: CPU-sized demo ($$args)"; fi; \
	$(BIN)/helmholtz-pinn invert --out $(OUT) --overwrite $$args
	@echo "results in $(OUT)/ (mu.npz in Pa, metrics.json, *.png)"

## Install the package with test tools and run the test suite (CPU).
test: $(STAMP)
	$(BIN)/python -m pytest -q tests

lint: $(STAMP)
	$(BIN)/ruff check helmholtz_pinn tests scripts
	$(BIN)/ruff format --check helmholtz_pinn tests scripts

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
