#!/bin/sh
# Rolling work across a VM scale set: patch every instance once, two at a
# time. Run this same script on every instance (the scale set's custom
# script extension, `az vmss run-command invoke`, or cron): two instances
# patch at once, each on its own slot; the others wait; an instance that has
# patched skips (exit 0) whenever it runs the line again; an instance whose
# patch failed (non-zero exit) is not recorded as done and patches again the
# next time it runs the line.
#
# One lease name per round: a new round (next month's patch) is a new name.
# Every instance must use the same --slots. The instance is its host name
# (or --identity when given), so a reimaged instance with a new name patches
# again. The scale set's managed identity needs "Storage Blob Data
# Contributor" on the container (see cloud-init.yaml).
set -eu
export AZURE_STORAGE_ACCOUNT=mystorageaccount
export LEADERRUN_CONTAINER=leaderrun

# LEADERRUN_SLOT (0 or 1) tells patch.sh which slot it holds.
leaderrun -l patch/2026-11 --slots 2 --once-per-host -w 2h -- /opt/ops/patch.sh
