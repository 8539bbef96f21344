#!/usr/bin/env bash
# Profiles the launch path with perf (Linux perf, e.g. Debian's linux-perf): the Node launch loop
# (bench/launch-loop.ts, Kernel.launch and the raw layer) and the C baseline's enqueue command
# (bench/native/baseline.c, built by `npm run bench` into bench/native/out), each recorded with call graphs, then
# reported by shared object and by symbol. Usage: bash bench/profile-launch.sh [out-dir] (default: perf-out).
set -uo pipefail
out=${1:-perf-out}
perf=${PERF:-perf}
mkdir -p "$out"
"$perf" record -F 4999 -g -N -o "$out/node.data" -- \
  node --perf-basic-prof --import tsx bench/launch-loop.ts 3 2>&1 | tee "$out/node.log"
"$perf" report -i "$out/node.data" --stdio --no-children --sort dso 2>/dev/null | grep -v '^#' | head -25 \
  > "$out/node-dso.txt"
"$perf" report -i "$out/node.data" --stdio --no-children --sort dso,sym -g none 2>/dev/null | grep -v '^#' |
  head -60 > "$out/node-sym.txt"
if [[ -x bench/native/out/baseline ]]; then
  # 300 enqueue commands: 3,000,000 launches; the baseline compiles its kernel for this GPU's architecture
  arch=sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
  yes enqueue | head -300 | "$perf" record -F 4999 -g -N -o "$out/c.data" -- bench/native/out/baseline \
    "--gpu-architecture=$arch" > "$out/c.log" 2>&1
  "$perf" report -i "$out/c.data" --stdio --no-children --sort dso 2>/dev/null | grep -v '^#' | head -25 \
    > "$out/c-dso.txt"
  "$perf" report -i "$out/c.data" --stdio --no-children --sort dso,sym -g none 2>/dev/null | grep -v '^#' |
    head -60 > "$out/c-sym.txt"
else
  echo "no bench/native/out/baseline: run npm run bench once to build it" > "$out/c-dso.txt"
fi
head -30 "$out"/*-dso.txt
