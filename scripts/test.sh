#!/usr/bin/env bash
# test.sh — leaderrun's whole test suite, on a fresh machine with Go and Node:
# formatting and vet, the help texts and man pages (width, sections, mandoc's
# lint), unit tests (with the race detector), the storage tests
# and the end-to-end tests against the Azurite emulator, which this script
# installs (pinned), starts on a free loopback port and stops again; then the
# release artifacts, built and checked with dpkg-deb, lintian and rpm, and the
# example units and cloud-init file with systemd-analyze and cloud-init (the
# tools installed with apt-get where missing and possible).
#
#   scripts/test.sh                 everything
#   scripts/test.sh -run TestScripts ./...   extra arguments go to `go test` (no package checks)
#
# Under CI=true a missing emulator fails the run instead of skipping tests.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

echo "== gofmt, go vet"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './scripts/azurite/*'))
if [[ -n "$unformatted" ]]; then
  echo "gofmt would change: $unformatted" >&2
  exit 1
fi
go vet ./...
GOOS=darwin go build -o /dev/null . # it must build on macOS
# Every start pays for the packages the binary initialises. Storage goes
# through azblob's lease package (pinned at v1.8.0, see go.mod); newer azblob
# releases link Apache Arrow and four companions through it, and the
# documentation generator belongs to scripts/man only.
deps=$(go list -deps .)
if ! grep -qx 'github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease' <<<"$deps"; then
  echo "test.sh: the leaderrun binary must use github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease for its storage requests" >&2
  exit 1
fi
if grep -q 'leaderrun/internal/testkit' <<<"$deps"; then
  echo "test.sh: the leaderrun binary must not link the test tooling (internal/testkit)" >&2
  exit 1
fi
heavy=$(grep -E '^github.com/apache/arrow|^github.com/klauspost/compress|^github.com/goccy/go-json|^github.com/google/flatbuffers|^github.com/pierrec/lz4|^github.com/spf13/cobra/doc|^github.com/cpuguy83/go-md2man' <<<"$deps" || true)
if [[ -n "$heavy" ]]; then
  echo "test.sh: the leaderrun binary must not depend on:" $(sed -E 's#^(github.com/[^/]+/[^/]+).*#\1#' <<<"$heavy" | sort -u) >&2
  exit 1
fi

echo "== help and man pages"
# Help is read in a terminal and a man page is read like one: every help
# text within 80 columns, every page with the sections a reader looks for,
# and mandoc's lint (installed with apt-get where missing, as below).
if ! command -v mandoc >/dev/null && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
  echo "test.sh: installing mandoc with apt-get" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mandoc; } >/dev/null || true
fi
docs=$(mktemp -d "${TMPDIR:-/tmp}/leaderrun-docs.XXXXXX")
go build -o "$docs/leaderrun" .
go run ./scripts/man "$docs/man"
export LC_ALL=C.UTF-8 # ${#line} counts characters
helps=("help exit-status" "help environment")
for page in "$docs"/man/*.1; do
  name=$(basename "$page" .1)
  words=(${name//-/ })
  sub="${words[*]:1}"
  helps+=("${sub:+$sub }--help")
done
for args in "${helps[@]}"; do
  while IFS= read -r line; do
    if (( ${#line} > 80 )); then
      echo "test.sh: 'leaderrun $args' has a line of ${#line} columns: $line" >&2
      exit 1
    fi
  done < <("$docs/leaderrun" $args)
done
for page in "$docs"/man/*.1; do
  name=$(basename "$page" .1)
  sections=$(sed -n 's/^\.SH "\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$page" | grep -vx SUBCOMMANDS | paste -sd, -)
  want="NAME,SYNOPSIS,DESCRIPTION,OPTIONS,EXIT STATUS,ENVIRONMENT,EXAMPLES,SEE ALSO"
  if [[ "$sections" != "$want" ]]; then
    echo "test.sh: $name.1 has the sections $sections, want $want" >&2
    exit 1
  fi
done
if command -v mandoc >/dev/null; then
  lint=$(mandoc -Tlint -W all "$docs"/man/*.1 2>&1 || true)
  if [[ -n "$lint" ]]; then
    echo "test.sh: mandoc -Tlint finds fault with the man pages:" >&2
    echo "$lint" >&2
    exit 1
  fi
elif [[ "${CI:-}" == "true" ]]; then
  echo "test.sh: mandoc not found and not installable; under CI this fails the run" >&2
  exit 1
else
  echo "test.sh: skipping the man pages' lint: mandoc not found (apt-get install mandoc)" >&2
fi
unset LC_ALL
rm -rf "$docs"

echo "== Azurite"
export AZURITE_STATE_DIR
AZURITE_STATE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/leaderrun-azurite.XXXXXX")
cleanup() { scripts/azurite.sh stop || true; rm -rf "$AZURITE_STATE_DIR"; }
trap cleanup EXIT
if cs=$(scripts/azurite.sh start); then
  export LEADERRUN_TEST_CONNECTION_STRING="$cs"
elif [[ "${CI:-}" == "true" ]]; then
  echo "test.sh: the Azurite emulator did not start; under CI this fails the run" >&2
  exit 1
else
  echo "test.sh: the Azurite emulator did not start; storage and end-to-end tests will be skipped" >&2
fi

echo "== go test"
args=("$@")
[[ ${#args[@]} -gt 0 ]] || args=(./...)
go test -race -count=1 -timeout 8m "${args[@]}"

[[ ${#args[@]} -eq 1 && ${args[0]} == ./... ]] || exit 0
echo "== simulator"
# The race run above takes 100 seeds of the simulator; these are the 2,000
# of CI, without the race detector (docs/design.md §10).
sim_out=$(mktemp "${TMPDIR:-/tmp}/leaderrun-sim.XXXXXX")
sim_status=0
go test -count=1 -timeout 5m -run 'TestSimulate$' ./internal/testkit/sim -seeds 2000 -v >"$sim_out" 2>&1 || sim_status=$?
grep -E '^(ok|FAIL|panic)|--- FAIL|seeds from|broke|^ +[a-z].*:|replay:|whole trace' "$sim_out" | head -60
rm -f "$sim_out"
[[ $sim_status -eq 0 ]]

echo "== packages"
# The release artifacts, checked with the packaging world's own tools
# (scripts/check-release.sh); installed here as Azurite is, where missing.
tools=(lintian rpm rpm2cpio cpio dpkg-deb readelf cloud-init systemd-analyze promtool)
missing=()
for t in "${tools[@]}"; do command -v "$t" >/dev/null || missing+=("$t"); done
if [[ ${#missing[@]} -gt 0 && $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
  echo "test.sh: installing ${missing[*]} with apt-get" >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq lintian rpm cpio binutils cloud-init systemd >/dev/null &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null || true
  missing=()
  for t in "${tools[@]}"; do command -v "$t" >/dev/null || missing+=("$t"); done
fi
if [[ ${#missing[@]} -gt 0 ]]; then
  if [[ "${CI:-}" == "true" ]]; then
    echo "test.sh: ${missing[*]} not found and not installable; under CI this fails the run" >&2
    exit 1
  fi
  echo "test.sh: skipping the package and example checks: ${missing[*]} not found (apt-get install lintian rpm cpio binutils cloud-init systemd prometheus)" >&2
else
  dist=$(mktemp -d "${TMPDIR:-/tmp}/leaderrun-dist.XXXXXX")
  DIST="$dist" scripts/release.sh >/dev/null
  scripts/check-release.sh -reproducible "$dist"
  rm -rf "$dist"
  scripts/check-examples.sh
fi
