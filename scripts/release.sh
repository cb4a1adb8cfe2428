#!/usr/bin/env bash
# release.sh — build release binaries of leaderrun for linux/amd64,
# linux/arm64 and darwin/arm64 into dist/, stripped (-s -w) and reproducible
# (-trimpath), with the version and commit stamped in, plus SHA256SUMS and
# the man pages.
#
#   scripts/release.sh [VERSION]     VERSION defaults to `git describe`
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

version=${1:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
out=dist
rm -rf "$out"; mkdir -p "$out"
ldflags="-s -w -X github.com/leaderrun/leaderrun/cmd.version=$version -X github.com/leaderrun/leaderrun/cmd.commit=$commit"
for target in linux/amd64 linux/arm64 darwin/arm64; do
  os=${target%/*} arch=${target#*/}
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "$ldflags" -o "$out/leaderrun-$os-$arch" .
done
go run ./scripts/man -version "$version" "$out/man"
(cd "$out" && sha256sum leaderrun-* > SHA256SUMS)
for f in "$out"/leaderrun-*; do
  awk -v n="$(basename "$f")" -v s="$(wc -c <"$f")" 'BEGIN { printf "%-32s %6.1f MiB\n", n, s / 1048576 }'
done
echo "release.sh: $version ($commit) in $out/"
