#!/usr/bin/env bash
# sim.sh — the simulator of the whole run flow (internal/testkit/sim) over
# many seeds, in parallel processes, with a summary: seeds run, time, seeds
# per second, and every failing seed with its trace and how to replay it.
#
#   scripts/sim.sh                      2,000 seeds from 1, one process per CPU
#   scripts/sim.sh -n 200000 -from 1000 -p 2
#   scripts/sim.sh -seed 1234           replay one seed and print its trace
#   scripts/sim.sh -teeth [-n 2000] [-only REGEX]
#                                       put known bugs back, one at a time
#                                       (testdata/sim-teeth/*.patch), and count
#                                       the seeds the simulator needs to find each
#
# Every seed draws its own world (mode, hosts, faults, signals, kills,
# freezes, operator actions); a failing seed replays exactly.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

n=2000 from=1 procs=$(nproc 2>/dev/null || echo 2) seed="" teeth="" chunk=1000 only=.
while [[ $# -gt 0 ]]; do
  case "$1" in
    -n) n=$2; shift 2 ;;
    -from) from=$2; shift 2 ;;
    -p) procs=$2; shift 2 ;;
    -seed) seed=$2; shift 2 ;;
    -chunk) chunk=$2; shift 2 ;;
    -teeth) teeth=1; shift ;;
    -only) only=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "sim.sh: unknown argument $1 (see -h)" >&2; exit 64 ;;
  esac
done

if [[ -n "$seed" ]]; then
  exec go test -count=1 -run 'TestSimulate$' ./internal/testkit/sim -seed "$seed" -simlog debug
fi

# run_seeds DIR FROM N: the seeds [FROM, FROM+N) in chunks, $procs at a time,
# with the test binary built from the tree at DIR. Prints the summary and
# returns 1 if any seed failed; the first failing seed goes to DIR/first.
run_seeds() {
  local dir=$1 first=$2 count=$3 tmp
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/leaderrun-sim.XXXXXX")
  (cd "$dir" && go test -c -o "$tmp/sim.test" ./internal/testkit/sim)
  local start end
  start=$(date +%s.%N)
  local s=$first
  local last=$((first + count))
  : >"$tmp/chunks"
  while [[ $s -lt $last ]]; do
    local c=$((last - s < chunk ? last - s : chunk))
    echo "$s $c" >>"$tmp/chunks"
    s=$((s + c))
  done
  # Each chunk's output goes to a file of its own; a chunk stops at its
  # first failure (-failfast), which is enough to name the seed.
  xargs -P "$procs" -L 1 sh -c '
    "$0/sim.test" -test.run "TestSimulate\$" -test.failfast -test.timeout 2h \
      -from "$1" -seeds "$2" -tracedir "$0" >"$0/out.$1" 2>&1 || true
  ' "$tmp" <"$tmp/chunks"
  end=$(date +%s.%N)
  local failed
  failed=$(grep -ho 'seed [0-9]* broke' "$tmp"/out.* | awk '{print $2}' | sort -n -u || true)
  awk -v n="$count" -v s="$start" -v e="$end" -v f="$(echo "$failed" | grep -c . || true)" -v from="$first" 'BEGIN {
    t = e - s; printf "%d seeds from %d in %.1f s (%.0f seeds/s): %d failed\n", n, from, t, n / t, f }'
  if [[ -n "$failed" ]]; then
    echo "$failed" | head -1 >"$dir/.sim-first"
    for f in $failed; do
      echo "  seed $f: $(grep -h -A3 "seed $f broke" "$tmp"/out.* | sed -n 2p | sed 's/^ *//')"
      echo "    trace: $tmp/leaderrun-sim-seed-$f.trace"
      echo "    replay: scripts/sim.sh -seed $f"
    done
    return 1
  fi
  grep -h 'FAIL\|panic' "$tmp"/out.* | head -5 || true
  rm -rf "$tmp"
}

if [[ -z "$teeth" ]]; then
  run_seeds "$root" "$from" "$n"
  exit $?
fi

# Teeth: each patch puts a known bug back in a copy of the tree; the
# simulator must find it within the seeds given.
printf '%-28s %s\n' "bug put back" "seeds to find it (of $n)"
status=0
for patch in testdata/sim-teeth/*.patch; do
  name=$(basename "$patch" .patch)
  [[ $name =~ $only ]] || continue
  copy=$(mktemp -d "${TMPDIR:-/tmp}/leaderrun-teeth.XXXXXX")
  git ls-files -z | xargs -0 -I{} cp --parents {} "$copy"
  (cd "$copy" && git init -q && git apply "$root/$patch")
  rm -f "$copy/.sim-first"
  if run_seeds "$copy" "$from" "$n" >"$copy/summary" 2>&1; then
    printf '%-28s %s\n' "$name" "not found"
    status=1
  else
    first=$(cat "$copy/.sim-first" 2>/dev/null || echo "?")
    printf '%-28s %s (seed %s)\n' "$name" "$((first - from + 1))" "$first"
  fi
  rm -rf "$copy"
done
exit $status
