#!/usr/bin/env bash
# chaos.sh — leaderrun's chaos run: N randomized fault-injection trials
# (black holes, resets, 5xx/429 and latency, an operator's break, kill -9,
# a stubborn child, a frozen leaderrun, a deleted lease blob, throttling, writes
# whose answer is lost, grandchildren that escape COMMAND's group, a deputy
# killed, frozen or cut off during a handover) against its own
# Azurite emulator on loopback, and a markdown table of what they measured:
# overlaps, how long the old child ran after the fault, failover times.
#
#   scripts/chaos.sh                    100 trials over all 14 scenarios
#   scripts/chaos.sh -n 20 -p 4         20 trials, 4 at a time
#   scripts/chaos.sh -s 11,12 -n 30     throttling and lost answers only
#   scripts/chaos.sh -s freeze,9        by name or number
#   scripts/chaos.sh -s deputy -n 15    handovers whose deputy is killed, frozen or
#                                       cut off around the leader's SIGTERM
#   scripts/chaos.sh -s escape -n 16    grandchildren that leave COMMAND's group
#                                       (timeout, setsid, a double fork), under a
#                                       lost lease, an outside SIGTERM, kill -9
#   scripts/chaos.sh -seed 42 ...       replay a run (the seed is printed)
#   scripts/chaos.sh -slots 2 -s blackhole,kill9   on a lease of 2 slots: at most 2 at every instant
#
# Other flags: -timeout (hard cap, 30m), -trial-timeout (2m), -keep.
# The driver is scripts/chaos (`go run ./scripts/chaos` does the same); this
# wrapper builds it, runs it, forwards Ctrl-C / SIGTERM to it, and stops its
# emulator even if the driver is killed. Exit status: 0 all expectations met,
# 1 a failure (any overlap among them), 2 incomplete.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

# shellcheck source=scripts/driver.sh
. scripts/driver.sh
run_driver chaos "$@"
