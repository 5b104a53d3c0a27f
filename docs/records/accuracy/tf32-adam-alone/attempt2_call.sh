python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:. || exit 1
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; python3 -c "import jax,flax,optax;print('jax',jax.__version__,'flax',flax.__version__,'optax',optax.__version__,jax.devices())"; nproc; } > $OUT/machine.txt 2>&1
T0=$(date +%s)
V=data/elastic/tuning/four-target_volume_clean.npz
W=data/sweep
C=:--tf32-steps,5000
D=${D:-330}
lane() { CACHE=/tmp/c_$1 python3 data/gpu/tta.py $OUT/tta.jsonl $OUT/log.txt $D "${@:2}" > $OUT/lane_$1.txt 2>&1; }
lane 1 h-inplane_C:$W/heldout-inplane-clean.npz$C h-inplane_F:$W/heldout-inplane-clean.npz h-stack3_C:$W/heldout-stack3-clean.npz$C h-stack3_F:$W/heldout-stack3-clean.npz &
lane 2 t-inplane_C:$W/tuning-inplane-clean.npz$C t-inplane_F:$W/tuning-inplane-clean.npz h-plane64_C:$W/heldout-plane64-clean.npz$C h-plane64_F:$W/heldout-plane64-clean.npz &
lane 3 vol_C:$V$C vol_F:$V h-inplane_F2:$W/heldout-inplane-clean.npz &
lane 4 t-stack48_C:$W/tuning-stack48-clean.npz$C t-stack48_F:$W/tuning-stack48-clean.npz t-plane64_C:$W/tuning-plane64-clean.npz$C t-plane64_F:$W/tuning-plane64-clean.npz &
lane 5 h-stack48_C:$W/heldout-stack48-clean.npz$C h-stack48_F:$W/heldout-stack48-clean.npz t-stack3_C:$W/tuning-stack3-clean.npz$C t-stack3_F:$W/tuning-stack3-clean.npz &
lane 6 t-plane128_C:$W/tuning-plane128-clean.npz$C t-plane128_F:$W/tuning-plane128-clean.npz h-plane128_C:$W/heldout-plane128-clean.npz$C h-plane128_F:$W/heldout-plane128-clean.npz &
wait
nvidia-smi --query-gpu=memory.used --format=csv
echo all done $(( $(date +%s) - T0 ))
