#!/usr/bin/env bash
# One prepared GPU check (issue: performance). On a machine with a CUDA GPU and torch installed:
#   bash benchmarks/gpu.sh [OUT_DIR]
# writes one JSON line per (preset, precision) from `unmix bench --json` to OUT_DIR/bench.jsonl
# for Table 1 rows 1, 5, 7 at B = 6144 (fp32 and bf16) and one at B = 65,536 (row 1, fp32: the
# memory-linear loss), then trains Table 1 row 1 at the paper's architecture and recipe for
# 3 minutes (OUT_DIR/row1-paper/metrics.csv: held-out R² every 500 steps) and, last, benches row 7
# with train.loss_kernels=compiled (Triton). Nothing here is needed by the tests.
#
# Each step has its own time limit and writes straight to files, never through a pipe: a
# compiler's worker processes that outlive their step cannot hold the script (or a `| tee`
# around it) open. OUT_DIR/progress.log says which step ran, how long it took and its exit status.
# Budget: ≈ 5-7 minutes on an H200 (the first call of the 2026-12-04 session, which piped the whole
# script through tee and ran the compiled bench before the training, returned nothing in 580 s).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu-results}
mkdir -p "$out"
py=python
command -v python >/dev/null || py=python3
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_COMPILE_THREADS=1
log="$out/progress.log"
step() {  # step LIMIT_S NAME COMMAND...: run with a limit, stdout appended to $out/NAME.out
  local limit=$1 name=$2 t0=$SECONDS rc
  shift 2
  timeout -k 5 "$limit" "$@" >>"$out/$name.out" 2>>"$out/$name.err" </dev/null
  rc=$?
  echo "$name rc=$rc $((SECONDS - t0)) s" | tee -a "$log"
}
unmix_() { if command -v unmix >/dev/null; then unmix "$@"; else "$py" -m unmix "$@"; fi; }
$py -c "import torch; assert torch.cuda.is_available(), 'no CUDA GPU visible'; print(torch.__version__, torch.cuda.get_device_name())" | tee -a "$log" || exit 1
for preset in zimmermann-table1-row1 zimmermann-table1-row5 zimmermann-table1-row7; do
  for precision in fp32 bf16; do
    step 60 bench unmix_ bench "$preset" --device cuda --batch-size 6144 --steps 20 \
      --precision "$precision" --json
  done
done
step 90 bench unmix_ bench zimmermann-table1-row1 --device cuda --batch-size 65536 --steps 5 --json
# time to R²: the paper's recipe (batch 6144, lr 1e-4, 300k steps) cut off after 180 s
step 180 train unmix_ train zimmermann-table1-row1 --budget paper --device cuda \
  train.eval_every=500 train.checkpoint_seconds=20 --out "$out/row1-paper" --no-progress
# the p = 3 row with the compiled general-p kernels (Triton; auto keeps CUDA on the eager path)
step 120 bench_compiled unmix_ bench zimmermann-table1-row7 --device cuda --batch-size 6144 \
  --steps 20 --json train.loss_kernels=compiled
cat "$out/bench.out" "$out/bench_compiled.out" >"$out/bench.jsonl" 2>/dev/null
cat "$out/bench.jsonl"
if [ -f "$out/row1-paper/metrics.csv" ]; then
  $py - "$out/row1-paper/metrics.csv" <<'PY'
import sys
import pandas as pd
df = pd.read_csv(sys.argv[1])
print(df[["step", "elapsed_s", "r2", "mcc", "loss"]].to_string(index=False))
PY
fi
