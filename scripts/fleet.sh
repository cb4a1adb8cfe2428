#!/usr/bin/env bash
# fleet.sh — leaderrun at fleet scale: a whole scale set's cron lines (the
# README's recipe: --no-wait -E 0 --once-per 4m -q) reaching one lease blob in
# the same instant, behind a proxy that throttles the blob as the storage
# service does (503 ServerBusy beyond a rate per blob), on loopback. Prints a
# markdown table: runs (must be 1), non-zero exits (must be 0), lines under -q
# (must be 0), requests per contender, and the time until the last was done.
#
#   scripts/fleet.sh                              1,000 (200 processes) at 500/s, 100 (all processes) at 10/s
#   scripts/fleet.sh -cases 1000/1000@500         every contender a process
#   scripts/fleet.sh -splay 30s                   with the recipe's --splay
#
# Other flags: -timeout (hard cap, 10m). The driver is scripts/fleet (`go run
# ./scripts/fleet` does the same); this wrapper builds it, runs it, forwards
# Ctrl-C / SIGTERM to it, and stops its emulator even if the driver is
# killed. Exit status: 0 every case met its musts, 1 one did not, 2 a case
# could not run.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

# shellcheck source=scripts/driver.sh
. scripts/driver.sh
run_driver fleet "$@"
