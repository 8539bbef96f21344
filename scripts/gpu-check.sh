#!/usr/bin/env bash
# Every check that needs an NVIDIA GPU, in one go:
#   bash scripts/gpu-check.sh [tests] [gpu | gpu-main gpu-problems gpu-problem-set gpu-adversarial] [sanitizer]
#     [bench] [memory] [harness] [cli] [examples] [service-bench] [multi-gpu-bench] [python-aa]
# (tests: every tier; gpu: the GPU tier alone, in its four parts, which gpu-main, gpu-problems, gpu-problem-set and
# gpu-adversarial run one at a time; service-bench: the evaluation service's GPU benchmark;
# multi-gpu-bench: the service on two GPUs, which says why and writes nothing on a machine with fewer;
# python-aa: cudakit's timing and the Python runner's on the same CUBIN, with PYTHON or python3 on PATH.)
# Logs, JSON reports and a copy of bench/RESULTS.md go to the folder $OUT names, or ./gpu-out.
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out"
steps=${*:-tests sanitizer bench examples}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv \
  > "$out/smi.txt" 2>&1
cat "$out/smi.txt"

# summary LABEL REPORT...: one line of counts over the reports (the problem set's shards write one each), then the
# failures.
summary() {
  node -e '
    const [label, ...files] = process.argv.slice(1);
    const reports = files.map((file) => JSON.parse(require("fs").readFileSync(file, "utf8")));
    const results = reports.flatMap((r) => r.testResults);
    // A test is counted once: passed or failed where a report ran it, skipped where none did (a shard skips the tests
    // its name pattern leaves to the others).
    const outcome = new Map();
    for (const f of results)
      for (const t of f.assertionResults) {
        const key = `${f.name}\0${t.fullName}`, was = outcome.get(key);
        if (was === undefined || was === "skipped" || t.status === "failed") outcome.set(key, t.status);
      }
    const count = (...statuses) => [...outcome.values()].filter((s) => statuses.includes(s)).length;
    console.log(
      `${label}: ${count("passed")} passed, ${count("failed")} failed, ${count("skipped", "pending", "todo")} skipped`,
    );
    // A file that fails to load has no tests to count: name it, or a broken file reads as a green run.
    for (const f of results)
      if (f.status === "failed" && f.assertionResults.every((t) => t.status !== "failed"))
        console.log("  FAILED FILE:", f.name, "\n   ", (f.message ?? "").split("\n").slice(0, 6).join("\n    "));
    for (const f of results)
      for (const t of f.assertionResults)
        if (t.status === "failed")
          console.log(
            "  FAILED:",
            t.fullName,
            "\n   ",
            (t.failureMessages[0] ?? "").split("\n").slice(0, 6).join("\n    "),
          );
  ' "$@"
}

# The problems' GPU files (evaluateProblem() and the shipped problem set: every case of every problem, compared
# with its reference) run as a part of their own, with their own time limit, after the rest of the tier.
# The shipped problem set's file alone takes longer than the rest: it is a part of its own (gpu-problem-set).
PROBLEM_FILES=(test/gpu/problem.test.ts server/test/problems/problem-jobs.gpu.test.ts)
PROBLEM_SET_FILES=(server/test/problems/problem-set.gpu.test.ts)
# So do the adversarial suite's (test/adversarial/: every kernel through evaluate() and through the service).
ADVERSARIAL_FILES=(test/gpu/adversarial.test.ts server/test/security/adversarial.gpu.test.ts)
not_problems=(--exclude 'test/gpu/problem.test.ts' --exclude 'server/test/problems/**'
  --exclude 'test/gpu/adversarial.test.ts' --exclude 'server/test/security/adversarial.gpu.test.ts')
problems_part() {
  CUDAKIT_REQUIRE_GPU=1 CUDAKIT_REQUIRE_CUPTI=1 timeout 540 npx vitest run --project gpu "${PROBLEM_FILES[@]}" \
    --reporter=default --reporter=json --outputFile.json="$out/gpu-problems.json" \
    > "$out/gpu-problems.log" 2>&1
  summary "gpu tier (problems), CUDAKIT_REQUIRE_GPU=1" "$out/gpu-problems.json" | tee -a "$out/summary.txt"
}
# The problems of the set run in PROBLEM_SHARDS processes at once (default 4): a case's time goes mostly to the host
# (NVRTC, inputs, the check), and the file's assertions hold under a shared GPU (a case may only be too fast for its
# roofline, and sharing makes it slower). PROBLEMS='softmax|sgemm' runs those problems alone (a test-name pattern), so
# the set fits in pieces where one command may not run as long as the whole of it.
problem_set_part() {
  local names shards=${PROBLEM_SHARDS:-4} reports=() i
  mapfile -t names < <(ls server/problems/*/problem.json | cut -d/ -f3 | grep -E "^(${PROBLEMS:-.*})$")
  for ((i = 0; i < shards && i < ${#names[@]}; i++)); do
    local mine=() j
    for ((j = i; j < ${#names[@]}; j += shards)); do mine+=("${names[j]}"); done
    local pattern
    pattern=$(IFS='|'; echo "${mine[*]}")
    reports+=("$out/gpu-problem-set-$i.json")
    CUDAKIT_REQUIRE_GPU=1 CUDAKIT_REQUIRE_CUPTI=1 timeout 900 npx vitest run --project gpu "${PROBLEM_SET_FILES[@]}" \
      -t "^the shipped problems ($pattern):" \
      --reporter=default --reporter=json --outputFile.json="$out/gpu-problem-set-$i.json" \
      > "$out/gpu-problem-set-$i.log" 2>&1 &
  done
  wait
  summary "gpu tier (problem set), CUDAKIT_REQUIRE_GPU=1" "${reports[@]}" | tee -a "$out/summary.txt"
}
adversarial_part() {
  CUDAKIT_REQUIRE_GPU=1 CUDAKIT_REQUIRE_CUPTI=1 timeout 420 npx vitest run --project gpu "${ADVERSARIAL_FILES[@]}" \
    --reporter=default --reporter=json --outputFile.json="$out/gpu-adversarial.json" \
    > "$out/gpu-adversarial.log" 2>&1
  summary "gpu tier (adversarial suite), CUDAKIT_REQUIRE_GPU=1" "$out/gpu-adversarial.json" | tee -a "$out/summary.txt"
}

if [[ " $steps " == *" tests "* ]]; then
  CUDAKIT_REQUIRE_GPU=1 CUDAKIT_REQUIRE_CUPTI=1 timeout 560 npx vitest run "${not_problems[@]}" --reporter=json \
    --outputFile.json="$out/vitest.json" \
    > "$out/tests.log" 2>&1
  summary "all tiers but the problems' and the adversarial suite's, CUDAKIT_REQUIRE_GPU=1" "$out/vitest.json" |
    tee "$out/summary.txt"
  problems_part
  adversarial_part
fi
# `gpu` runs the GPU tier's four parts; `gpu-main`, `gpu-problems`, `gpu-problem-set` and `gpu-adversarial` run one
# each (where one command may not run as long as all four).
if [[ " $steps " == *" gpu "* || " $steps " == *" gpu-main "* ]]; then
  command -v ncu > /dev/null && ncu --version | tail -1 | tee -a "$out/summary.txt"
  CUDAKIT_REQUIRE_GPU=1 CUDAKIT_REQUIRE_CUPTI=1 timeout 560 npx vitest run --project gpu "${not_problems[@]}" \
    --reporter=default --reporter=json --outputFile.json="$out/gpu.json" \
    > "$out/gpu.log" 2>&1
  summary "gpu tier, CUDAKIT_REQUIRE_GPU=1" "$out/gpu.json" | tee -a "$out/summary.txt"
fi
if [[ " $steps " == *" gpu "* || " $steps " == *" gpu-problems "* ]]; then problems_part; fi
if [[ " $steps " == *" gpu "* || " $steps " == *" gpu-problem-set "* ]]; then problem_set_part; fi
if [[ " $steps " == *" gpu "* || " $steps " == *" gpu-adversarial "* ]]; then adversarial_part; fi
if [[ " $steps " == *" sanitizer "* ]]; then
  # API errors are not reported: the negative tests provoke them on purpose (invalid PTX, unknown kernel name,
  # out of memory, a capture violation). Memory errors all are; only planted device faults are skipped. The
  # service's GPU tests (server/test/**/*.gpu.test.ts) are left out: they supervise worker processes that run
  # evaluate(), which eval.test.ts covers here, and they plant faults on purpose (a hung kernel, an out-of-bounds
  # shared access). So are test/gpu/problem.test.ts (evaluate() over many cases, each of them covered here already)
  # and test/gpu/adversarial.test.ts (the suite's 37 evaluations, too slow under memcheck for its time limit).
  CUDAKIT_REQUIRE_GPU=1 CUDAKIT_UNDER_SANITIZER=1 timeout 500 compute-sanitizer --tool memcheck --target-processes all \
    --report-api-errors no --print-limit 20 \
    npx vitest run --project gpu --exclude 'server/test/**' --exclude 'test/gpu/problem.test.ts' \
    --exclude 'test/gpu/adversarial.test.ts' \
    --reporter=default --reporter=json --outputFile.json="$out/sanitizer.json" \
    > "$out/sanitizer.log" 2>&1
  summary "gpu tier under compute-sanitizer memcheck" "$out/sanitizer.json" | tee -a "$out/summary.txt"
  grep -E "ERROR SUMMARY" "$out/sanitizer.log" | sort | uniq -c | tee -a "$out/summary.txt"
fi
if [[ " $steps " == *" bench "* ]]; then
  timeout 300 npx tsx bench/run.ts --write --json 2>&1 | tee "$out/bench.log" | grep -v '^{'
  cp bench/RESULTS.md "$out/" 2>/dev/null
fi
if [[ " $steps " == *" memory "* ]]; then
  timeout 300 node --expose-gc --import tsx bench/memory.ts --write 2>&1 | tee "$out/memory.log"
  cp bench/RESULTS.md "$out/" 2>/dev/null
fi
if [[ " $steps " == *" harness "* ]]; then
  timeout 500 npx tsx bench/harness.ts --write 2>&1 | tee "$out/harness.log"
  cp bench/RESULTS.md "$out/" 2>/dev/null
fi
if [[ " $steps " == *" cli "* ]]; then
  {
    set -x
    npx tsx lib/cli/main.ts info
    npx tsx lib/cli/main.ts compile examples/cuda/saxpy.cu
    npx tsx lib/cli/main.ts bench examples/saxpy.bench.ts
    npx tsx lib/cli/main.ts bench examples/cuda/saxpy_vec4.cu --kernel saxpy --grid 4096 --block 1024 --arg f32=2.5 \
      --arg 'ptr:f32[16M]=uniform(-1,1)' --arg 'ptr:f32[16M]=uniform(-1,1):out' --arg i32=16777216 \
      --compare examples/cuda/saxpy.cu --compare-grid 65536 --compare-block 256 --bytes '12*16M' \
      --json "$out/compare.json"
    npx tsx lib/cli/main.ts bench examples/cuda/saxpy_wrong.cu --kernel saxpy --grid 65536 --block 256 --arg f32=2 \
      --arg 'ptr:f32[16M]=uniform(-1,1)' --arg 'ptr:f32[16M]=uniform(-1,1):out' --arg i32=16777216 \
      --ref examples/cuda/saxpy.cu
    echo "exit code: $?"
    set +x
  } > "$out/cli.log" 2>&1
  cat "$out/cli.log"
  # On a terminal the CLI colours its output and redraws a progress line on stderr: run it under a pty.
  if command -v script > /dev/null; then
    script -qec "npx tsx lib/cli/main.ts bench examples/saxpy.bench.ts --preset quick" /dev/null \
      > "$out/cli-tty.raw" 2>&1
    echo "cli on a pty: exit $?," \
      "$(sed 's/\r$//' "$out/cli-tty.raw" | tr -cd '\r' | wc -c) carriage returns inside lines (progress redraws)," \
      "$(grep -c $'\e\\[' "$out/cli-tty.raw") lines with colour codes" | tee -a "$out/summary.txt"
  fi
fi
if [[ " $steps " == *" examples "* ]]; then
  for f in examples/*.ts; do echo "\$ npx tsx $f"; timeout 120 npx tsx "$f" 2>&1; done > "$out/examples.log"
  cat "$out/examples.log"
fi
if [[ " $steps " == *" service-bench "* ]]; then
  abs_out=$(cd "$out" && pwd)
  (cd server && timeout 300 npx tsx bench/gpu.ts --write --json "$abs_out/service-bench.json") 2>&1 |
    tee "$out/service-bench.log"
  cp server/bench/RESULTS.md "$out/server-RESULTS.md" 2>/dev/null
fi
if [[ " $steps " == *" multi-gpu-bench "* ]]; then
  abs_out=$(cd "$out" && pwd)
  (cd server && timeout 330 npx tsx bench/multi-gpu.ts --write --json "$abs_out/multi-gpu-bench.json") 2>&1 |
    tee "$out/multi-gpu-bench.log"
  cp server/bench/RESULTS.md "$out/server-RESULTS.md" 2>/dev/null
fi
if [[ " $steps " == *" python-aa "* ]]; then
  abs_out=$(cd "$out" && pwd)
  (cd server && timeout 300 npx tsx bench/python-aa.ts --python "${PYTHON:-python3}" --write \
    --json "$abs_out/python-aa.json") 2>&1 | tee "$out/python-aa.log"
  cp server/bench/RESULTS.md "$out/server-RESULTS.md" 2>/dev/null
fi
echo "=== summary ==="
cat "$out/summary.txt" 2>/dev/null
rm -f "$out/tests.log"  # vitest.json has every result; the raw log only repeats it
