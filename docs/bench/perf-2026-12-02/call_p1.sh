set -x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=.:/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
python3 .tune/gemm.py highest
XLA_FLAGS=--xla_gpu_enable_triton_gemm=false python3 .tune/gemm.py highest
XLA_FLAGS=--xla_gpu_enable_triton_gemm=false python3 .tune/gemm.py TF32_TF32_F32_X3
python3 .tune/gemm.py TF32_TF32_F32_X3
python3 .tune/gemm_torch.py
timeout 240 python3 scripts/profile_step.py --out $OUT --workloads seed200 seed100000 defaults volume --steps 20
timeout 120 python3 scripts/profile_step.py --out $OUT/x3 --workloads seed100000 volume --steps 20 --precision TF32_TF32_F32_X3
