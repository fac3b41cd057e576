#!/usr/bin/env bash
# The whole-process cost of a command of the program: the median wall time and the median peak resident memory of
# N runs (default 10), as GNU time measures them. The planner's commands must start in milliseconds: the CUDA
# backend is a module loaded only by GPU commands (exec/cuda/cuda_loader.h).
#   bench/startup.sh [N]          # fsdpsim --version and a one-node Llama-3-8B simulate, from build/
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
program=${FSDPSIM_PROGRAM:-build/fsdpsim}
[[ -x /usr/bin/time ]] || { echo "bench/startup.sh: needs GNU time (apt-get install time)"; exit 2; }
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
measure() {
  local label=$1; shift
  local samples
  local samples="" start end rss
  for ((i = 0; i < runs; ++i)); do
    # The wall time of the program alone (microseconds; GNU time's clock has 10 ms steps and its own fork in it),
    # then its peak resident memory from a second run under GNU time.
    start=$EPOCHREALTIME
    "$@" >/dev/null 2>&1
    end=$EPOCHREALTIME
    rss=$(/usr/bin/time -f "%M" "$@" 2>&1 >/dev/null | tail -n 1)
    samples+="$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", (b - a) * 1000}') $rss"$'\n'
  done
  printf '%-40s %7.1f ms %6.1f MB   (median of %d)\n' "$label" \
    "$(awk 'NF {print $1}' <<<"$samples" | median)" "$(awk 'NF {print $2 / 1024}' <<<"$samples" | median)" "$runs"
}
measure "fsdpsim --version" "$program" --version
measure "fsdpsim simulate --model llama3-8b" "$program" simulate --model llama3-8b --topology dgx-h100-ndr
