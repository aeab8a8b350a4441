#!/usr/bin/env bash
# One prepared GPU check (issue: performance). On a machine with a CUDA GPU and torch installed:
#   bash benchmarks/gpu.sh [OUT_DIR]
# prints one JSON line per (preset, precision) from `unmix bench --json` for Table 1 rows 1, 5, 7
# at B = 6144 (fp32 and bf16), one at B = 65,536 (row 1, fp32: the memory-linear loss), row 7 with
# train.loss_kernels=compiled (Triton), then runs
# Table 1 row 1 at the paper's architecture and recipe for 3 minutes and prints held-out R² over
# time (metrics.csv, evaluated every 500 steps). Nothing here is needed by the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu-results}
mkdir -p "$out"
run() { if command -v unmix >/dev/null; then unmix "$@"; else python -m unmix "$@"; fi; }
python -c "import torch; assert torch.cuda.is_available(), 'no CUDA GPU visible'; print(torch.__version__, torch.cuda.get_device_name())"
for preset in zimmermann-table1-row1 zimmermann-table1-row5 zimmermann-table1-row7; do
  for precision in fp32 bf16; do
    run bench "$preset" --device cuda --batch-size 6144 --steps 20 --precision "$precision" --json \
      | tee -a "$out/bench.jsonl"
  done
done
run bench zimmermann-table1-row1 --device cuda --batch-size 65536 --steps 5 --json | tee -a "$out/bench.jsonl"
# the p = 3 row with the compiled general-p kernels (Triton; auto keeps CUDA on the eager path)
run bench zimmermann-table1-row7 --device cuda --batch-size 6144 --steps 20 --json \
  train.loss_kernels=compiled | tee -a "$out/bench.jsonl" || echo "compiled kernels unavailable on this GPU"
# time to R²: the paper's recipe (batch 6144, lr 1e-4, 300k steps) cut off after 180 s
timeout 180 bash -c "$(declare -f run); run train zimmermann-table1-row1 --budget paper --device cuda \
  train.eval_every=500 train.checkpoint_seconds=20 --out '$out/row1-paper' --no-progress" || true
python - "$out/row1-paper/metrics.csv" <<'PY'
import sys
import pandas as pd
df = pd.read_csv(sys.argv[1])
print(df[["step", "elapsed_s", "r2", "mcc", "loss"]].to_string(index=False))
PY
