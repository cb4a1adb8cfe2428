#!/usr/bin/env bash
# check-examples.sh — the example files users copy, checked by the tools that
# will read them: every systemd unit in testdata/examples with
# `systemd-analyze verify` (in a scratch root holding this tree's leaderrun at
# /usr/bin/leaderrun, as the packages install it, and a stub for every other
# program a unit runs; any complaint fails), cloud-init.yaml with
# `cloud-init schema`, and the alert rules with `promtool check rules`.
#
#   scripts/check-examples.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
fail() { echo "check-examples.sh: $*" >&2; exit 1; }
for tool in systemd-analyze cloud-init; do
  command -v "$tool" >/dev/null || fail "$tool not found (apt-get install systemd cloud-init)"
done
work=$(mktemp -d "${TMPDIR:-/tmp}/leaderrun-examples.XXXXXX")
trap 'rm -rf "$work"' EXIT

r=$work/root
mkdir -p "$r/usr/bin" "$r/usr/lib/systemd/system" "$r/etc/systemd/system"
go build -o "$r/usr/bin/leaderrun" .
cp -a /lib/systemd/system/*.target /lib/systemd/system/*.slice "$r/usr/lib/systemd/system/" 2>/dev/null || true
units=0
for unit in testdata/examples/*.service testdata/examples/*.timer; do
  [[ -e $unit ]] || continue
  cp "$unit" "$r/etc/systemd/system/"
  # A stub for each other program the unit runs.
  { grep -oE '^Exec[A-Za-z]*=[-@:+!]*/[^ ]+|-- /[^ ]+' "$unit" || true; } | grep -oE '/[^ ]+$' | while read -r prog; do
    [[ $prog == /usr/bin/leaderrun ]] && continue
    mkdir -p "$r$(dirname "$prog")"
    printf '#!/bin/sh\n' >"$r$prog"
    chmod +x "$r$prog"
  done || true
  units=$((units + 1))
done
[[ $units -gt 0 ]] || fail "no systemd unit in testdata/examples"
for unit in "$r"/etc/systemd/system/*; do
  name=/etc/systemd/system/$(basename "$unit")
  out=$(systemd-analyze verify --root="$r" "$name" 2>&1) || fail "systemd-analyze verify $(basename "$unit"): $out"
  [[ -z $out ]] || fail "systemd-analyze verify $(basename "$unit"): $out"
done
echo "check-examples.sh: systemd-analyze verify: $units units clean"
cloud-init schema -c testdata/examples/cloud-init.yaml >/dev/null || fail "cloud-init schema rejects testdata/examples/cloud-init.yaml"
echo "check-examples.sh: cloud-init schema: testdata/examples/cloud-init.yaml valid"
if command -v promtool >/dev/null; then
  promtool check rules testdata/examples/leaderrun.rules.yml >/dev/null || fail "promtool rejects testdata/examples/leaderrun.rules.yml"
  echo "check-examples.sh: promtool check rules: testdata/examples/leaderrun.rules.yml valid"
elif [[ "${CI:-}" == "true" ]]; then
  fail "promtool not found (apt-get install prometheus)"
else
  echo "check-examples.sh: promtool not found: the alert rules were not checked (apt-get install prometheus)" >&2
fi
