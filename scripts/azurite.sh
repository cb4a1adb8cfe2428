#!/usr/bin/env bash
# azurite.sh — install and run the Azure Storage emulator (blob service only)
# for leaderrun's tests, demo and benchmarks. Loopback only, in memory.
#
#   scripts/azurite.sh install          npm ci the pinned Azurite into scripts/azurite/node_modules
#   scripts/azurite.sh start            start on a free 127.0.0.1 port; prints the connection string
#   scripts/azurite.sh stop             stop the emulator this script started (by its PID)
#   scripts/azurite.sh env              print `export AZURE_STORAGE_CONNECTION_STRING=…` for a running one
#   scripts/azurite.sh run -- CMD...    start, run CMD with AZURE_STORAGE_CONNECTION_STRING set, stop
#
# State (pid, port, log) lives in $AZURITE_STATE_DIR (default .azurite/ at the
# repository root, ignored by git). With CI=true any failure is fatal and says so.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pkg="$root/scripts/azurite"
state=${AZURITE_STATE_DIR:-$root/.azurite}
bin="$pkg/node_modules/.bin/azurite-blob"
# The emulator's account and key are public (documented by Microsoft).
account=devstoreaccount1
key='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

die() { echo "azurite.sh: $*" >&2; exit 1; }

# version FILE: the "version" of a package.json, or of package-lock.json's
# node_modules/azurite entry; empty when unreadable.
version() {
  node -e 'const j=require(process.argv[1]); console.log((j.packages ? j.packages["node_modules/azurite"] : j).version)' "$1" 2>/dev/null || true
}

install() {
  command -v npm >/dev/null || die "npm not found: install Node.js 20 or newer"
  local want; want=$(version "$pkg/package-lock.json")
  # An emulator installed from an earlier pin is replaced: the tests rely on
  # the pinned version's API-version check.
  [[ -x "$bin" && -n "$want" && "$(version "$pkg/node_modules/azurite/package.json")" == "$want" ]] && return 0
  # Azurite 3.37 declares Node >= 22 but runs on Node 20; npm only warns.
  echo "azurite.sh: installing Azurite $want (pinned by scripts/azurite/package-lock.json)" >&2
  (cd "$pkg" && npm ci --no-audit --no-fund --loglevel=error >&2) || die "npm ci failed in $pkg"
  [[ -x "$bin" ]] || die "npm ci did not install $bin"
}

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

conn_string() {
  local port=$1
  printf 'DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=http://127.0.0.1:%s/%s;' \
    "$account" "$key" "$port" "$account"
}

running() {
  [[ -f "$state/pid" ]] && kill -0 "$(cat "$state/pid")" 2>/dev/null
}

start() {
  install
  if running; then conn_string "$(cat "$state/port")"; echo; return 0; fi
  mkdir -p "$state"
  local port pid i
  for attempt in 1 2 3; do
    port=$(free_port)
    "$bin" --blobHost 127.0.0.1 --blobPort "$port" --inMemoryPersistence --silent --loose \
      --disableTelemetry >"$state/azurite.log" 2>&1 &
    pid=$!
    for i in $(seq 1 100); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        echo "$pid" >"$state/pid"; echo "$port" >"$state/port"
        echo "azurite.sh: Azurite listening on 127.0.0.1:$port (pid $pid)" >&2
        conn_string "$port"; echo
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  cat "$state/azurite.log" >&2 || true
  die "Azurite did not start (log above)"
}

stop() {
  [[ -f "$state/pid" ]] || return 0
  local pid; pid=$(cat "$state/pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$state/pid" "$state/port"
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  env)
    running || die "not running (scripts/azurite.sh start)"
    printf "export AZURE_STORAGE_CONNECTION_STRING='%s'\n" "$(conn_string "$(cat "$state/port")")" ;;
  run)
    shift; [[ "${1:-}" == "--" ]] && shift
    [[ $# -gt 0 ]] || die "usage: azurite.sh run -- COMMAND [ARG...]"
    export AZURITE_STATE_DIR="$state"
    cs=$(start)
    trap stop EXIT
    AZURE_STORAGE_CONNECTION_STRING="$cs" "$@" ;;
  *) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 64 ;;
esac
