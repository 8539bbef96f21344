#!/usr/bin/env bash
# The launch enqueue per process and per CPU: the C baseline (bench/native/baseline.c, built by `npm run bench` into
# bench/native/out) and the Node launch loop (bench/launch-loop.ts), each started once pinned to every CPU in turn
# (taskset), then three times unpinned. Prints one line per start: the CPU, the C baseline's µs per launch (the
# median of five enqueue commands), Kernel.launch's and the raw layer's µs per launch. The spread between lines is
# what one process of either kind can read on this machine. Usage: bash bench/launch-affinity.sh
set -uo pipefail
exe=bench/native/out/baseline
[[ -x $exe ]] || { echo "no $exe: run npm run bench once to build it" >&2; exit 2; }
arch=sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
c_us() {
  printf 'enqueue\nenqueue\nenqueue\nenqueue\nenqueue\nquit\n' | "$@" "$exe" "--gpu-architecture=$arch" |
    grep -o '"launchEnqueueUs": [0-9.]*' | awk '{print $2}' | sort -n | sed -n 3p
}
node_us() { "$@" node --import tsx bench/launch-loop.ts 0.4 | awk '{print $2}' | paste -sd' '; }
echo 'cpu C_us Kernel.launch_us raw_us'
for cpu in $(seq 0 $(($(nproc) - 1))); do echo "$cpu $(c_us taskset -c "$cpu") $(node_us taskset -c "$cpu")"; done
for _ in 1 2 3; do echo "unpinned $(c_us) $(node_us)"; done
