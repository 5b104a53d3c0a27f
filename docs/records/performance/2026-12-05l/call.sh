python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:. || exit 1
export PYTHONUNBUFFERED=1
R=$PWD
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; python3 -c "import jax,flax,optax;print('jax',jax.__version__,'flax',flax.__version__,'optax',optax.__version__,jax.devices())"; nproc; git rev-parse HEAD 2>/dev/null; } > $OUT/machine.txt 2>&1
S=$R/data/elastic/tuning/four-target_slice_clean.npz
V=$R/data/elastic/tuning/four-target_volume_clean.npz
E=$R/helmholtz_pinn/examples/elastic-two-ellipse-slice.npz
T0=$(date +%s)
N() { CACHE=/tmp/cN python3 $R/data/gpu/tta.py $OUT/tta.jsonl $OUT/log.txt 600 "$@"; }
B() { (cd $R/data/base && PYTHONPATH=/tmp/site:. CACHE=/tmp/cB python3 $R/data/gpu/tta.py $OUT/tta.jsonl $OUT/log.txt 600 "$@"); }
left() { [ $(( $(date +%s) - T0 )) -lt $1 ]; }
N N_slice_cold:$S; B B_slice_cold:$S
N N_ex_cold:$E; B B_ex_cold:$E
N N_slice_warm:$S; B B_slice_warm:$S
N N_ex_warm:$E; B B_ex_warm:$E
left 380 && { N N_vol_cold:$V; B B_vol_cold:$V; }
left 480 && { N N_vol_warm:$V; B B_vol_warm:$V; }
left 560 && python3 data/gpu/misfit_time.py $V /tmp/runs/N_vol_warm/mu.npz > $OUT/misfit_time.json 2>&1
cat $OUT/misfit_time.json 2>/dev/null; echo elapsed $(( $(date +%s) - T0 ))
