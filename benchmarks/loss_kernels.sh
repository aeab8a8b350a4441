#!/usr/bin/env bash
# The general-p losses' block kernels, compiled vs eager (`train.loss_kernels`), per training step.
#
#   bash benchmarks/loss_kernels.sh            # quick budget (B = 1024, 1 thread) and B = 6144 (2 threads)
#
# Prints one line per `unmix bench --json` run: preset, kernels used, ms per step and the stages
# (sample / forward / loss / backward + Adam). Run it on a quiet machine; every number is
# measured in this run (the first compiled run of each shape includes no compile time: bench
# compiles during its two warm-up steps).
set -euo pipefail
show() {
  python -c 'import json, sys
d = json.loads(sys.stdin.read().strip().splitlines()[-1])
st = " / ".join(f"{1000 * v:.1f}" for v in d["stages"].values())
name, b, t, k, s = (d[key] for key in ("setting", "batch_size", "threads", "loss_kernels", "seconds_per_step"))
print(f"{name:<24} B={b:<5} threads={t} kernels={k:<9} {1000 * s:8.1f} ms  ({st})")'
}
echo "# quick budget: B = 1024, encoder 3 x 20N, standardised inputs, one thread"
for preset in zimmermann-table1-row1 zimmermann-table1-row5 zimmermann-table1-row7 \
              zimmermann-table1-row11 zimmermann-table2-row1 zimmermann-table2-row2; do
  for mode in eager auto; do
    OMP_NUM_THREADS=1 unmix bench "$preset" "model.hidden=[20,20,20]" model.standardize_input=true \
      "train.loss_kernels=$mode" --batch-size 1024 --steps 20 --threads 1 --json | show
  done
done
echo "# the paper's batch and encoder: B = 6144, two threads, alternated twice"
for round in 1 2; do
  for preset in zimmermann-table1-row5 zimmermann-table1-row7 zimmermann-table2-row1; do
    for mode in eager auto; do
      OMP_NUM_THREADS=2 unmix bench "$preset" "train.loss_kernels=$mode" --batch-size 6144 \
        --steps 4 --threads 2 --json | show
    done
  done
done
