#!/usr/bin/env bash
# Peak resident memory of `unmix bench` for every Table 1 and Table 2 preset (issue: performance,
# "peak RSS at B = 6144 <= 700 MB"), one thread, 2 timed steps; prints "preset peak_rss_mb s/step".
#   bash benchmarks/peak_rss.sh [BATCH_SIZE]
# The figure is the whole process's (torch and the other imported libraries included).
set -euo pipefail
cd "$(dirname "$0")/.."
batch=${1:-6144}
run() { if command -v unmix >/dev/null; then unmix "$@"; else python -m unmix "$@"; fi; }
presets=$(run settings | grep -o 'zimmermann-table[12]-row[0-9]*' | sort -u -V)
for preset in $presets; do
  OMP_NUM_THREADS=1 run bench "$preset" --batch-size "$batch" --steps 2 --threads 1 --json \
    | python -c "import json, sys; d = json.load(sys.stdin); print('$preset', round(d['peak_rss_mb']), round(d['seconds_per_step'], 3))"
done
