#!/usr/bin/env bash
# bench.sh — leaderrun's benchmarks, side by side with flock(1) and etcdctl
# lock, on loopback: start cost, graceful handover, crash failover, storage
# requests and their cost, footprint, many contenders, and this tree against
# an earlier commit's build. Prints markdown
# tables (medians and 95th percentiles) and what they mean for choosing
# --poll-interval and --lease-duration.
#
#   scripts/bench.sh                 the full run (≈ 8–10 min on 2 CPUs)
#   scripts/bench.sh -quick          a smoke run (≲ 2 min)
#   scripts/bench.sh -etcd=false     without the etcd columns
#
# Other flags: -only (some figures: start, handover, failover, steady, crowd,
# previous), -previous COMMIT and -previous-runs (figure 7: this tree against
# an earlier commit's build, by default the last REST client, d2c721f),
# -timeout (hard cap, 15m; 4m with -quick), -runs, -handovers,
# -failovers, -window, -contenders 50,200, -contender-poll, -contender-run,
# -rtt, -price-write/-price-read/-price-other/-price-list (USD per 10,000
# operations), -keep. The driver is scripts/bench (`go run ./scripts/bench`
# does the same); this wrapper installs etcd when it is missing and apt-get
# can (set BENCH_NO_INSTALL=1 to skip that; without etcd its columns say
# n/a), builds the driver, runs it, forwards Ctrl-C / SIGTERM to it, and
# stops its emulator even if the driver is killed. Exit status: 0 every
# figure measured, 1 a safety check failed (two commands at once), 2 some
# figure could not be measured.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

# etcd for the side-by-side columns: Debian's packages, when apt-get can
# install them (root, or passwordless sudo), bounded in time.
if [[ -z "${BENCH_NO_INSTALL:-}" ]] && ! { command -v etcd && command -v etcdctl; } >/dev/null 2>&1 \
  && command -v apt-get >/dev/null 2>&1; then
  sudo=
  if [[ $(id -u) -ne 0 ]]; then
    if sudo -n true 2>/dev/null; then sudo="sudo -n"; else sudo=none; fi
  fi
  if [[ "$sudo" != none ]]; then
    echo "bench.sh: installing etcd-server and etcd-client with apt-get (BENCH_NO_INSTALL=1 skips this)" >&2
    if ! timeout 300 $sudo apt-get install -y -qq etcd-server etcd-client >/dev/null 2>&1; then
      timeout 300 $sudo apt-get update -qq >/dev/null 2>&1 || true
      timeout 300 $sudo apt-get install -y -qq etcd-server etcd-client >/dev/null 2>&1 \
        || echo "bench.sh: could not install etcd; its columns will say n/a" >&2
    fi
  fi
fi

# shellcheck source=scripts/driver.sh
. scripts/driver.sh
run_driver bench "$@"
