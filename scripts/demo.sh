#!/usr/bin/env bash
# demo.sh — leaderrun on one machine: three contenders (vm-1, vm-2, vm-3) share
# one lease on the Azurite emulator. One leads and prints "leader <who> term <n>"
# every second; the others wait. The leader is stopped (SIGTERM: a graceful
# handover), then the next leader is killed (kill -9: the lease must expire
# first). Everything this script starts is stopped at the end.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

work=$(mktemp -d "${TMPDIR:-/tmp}/leaderrun-demo.XXXXXX")
export AZURITE_STATE_DIR="$work/azurite"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  scripts/azurite.sh stop || true
  rm -rf "$work"
}
trap cleanup EXIT
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "building leaderrun and starting Azurite"
go build -o "$work/leaderrun" .
export AZURE_STORAGE_CONNECTION_STRING
AZURE_STORAGE_CONNECTION_STRING=$(scripts/azurite.sh start)
export LEADERRUN_LEASE=demo
lr="$work/leaderrun"

declare -A pid_of
job='while :; do echo "leader $LEADERRUN_IDENTITY term $LEADERRUN_TERM"; sleep 1; done'
for vm in vm-1 vm-2 vm-3; do
  "$lr" --identity "$vm" --poll-interval 500ms -- sh -c "$job" > >(sed -u "s/^/[$vm] /") 2>&1 &
  pid_of[$vm]=$!
  pids+=("$!")
  sleep 0.3
done

holder() { "$lr" status -o json | sed -n 's/^  "holder": "\(.*\)",$/\1/p'; }

say "three contenders started; one leads, two wait"
sleep 4
"$lr" status
first=$(holder)

say "SIGTERM to the leader ($first): its command stops, the lease is released, a follower takes over"
kill -TERM "${pid_of[$first]}"
sleep 4
"$lr" status
second=$(holder)

say "kill -9 of the leader ($second): its command dies with it; the last follower waits for the lease to expire (15 s)"
kill -KILL "${pid_of[$second]}"
sleep 18
"$lr" status

say "done: stopping everything"
