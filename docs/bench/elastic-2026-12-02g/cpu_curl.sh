#!/bin/bash
# CPU, small networks: default navier against the pressure-free curl loss on the tuning slice.
O='{"steps": 3000, "width": 64, "mu_width": 32, "n_features": 64, "batch_size": 1024}'
S=clean/tuning/four-target_slice_clean.npz
for m in default curl:1 curl:0; do
  timeout 1500 ../.venv/bin/python curlnav.py $S $m "$O" >> cpu_curl.jsonl 2>>cpu_curl.err
done
