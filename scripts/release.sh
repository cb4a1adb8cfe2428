#!/usr/bin/env bash
# release.sh — leaderrun's release artifacts, in one command, into dist/:
#
#   leaderrun_VERSION_linux_{amd64,arm64}.tar.gz   binary, man pages, completions, examples
#   leaderrun_VERSION-1_{amd64,arm64}.deb           built by nfpm from packaging/nfpm.yaml
#   leaderrun-VERSION-1.{x86_64,aarch64}.rpm        the same contents
#   leaderrun_VERSION_darwin_arm64.tar.gz           the binary for macOS
#   SHA256SUMS                                      over every artifact above
#
#   scripts/release.sh [VERSION]     VERSION defaults to `git describe --tags`;
#                                    one that is not a version number
#                                    (no tag yet) becomes 0.0.0~gitDATE.COMMIT
#   DIST=DIR scripts/release.sh      write somewhere else than dist/
#
# The build is reproducible: every file time is the commit's time
# (SOURCE_DATE_EPOCH), the binaries are built with -trimpath, tarballs are
# sorted with owner 0 and gzip without a name or time, so two builds of one
# commit give the same SHA256SUMS (scripts/check-release.sh -reproducible
# checks it). The packager, nfpm, is installed pinned into .tools/ with the
# Go toolchain.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

nfpm_version=v2.44.0 # later releases need modules the Go module proxy does not serve
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
version=${1:-$(git describe --tags --always 2>/dev/null || echo dev)}
version=${version#v}
if [[ ! $version =~ ^[0-9]+\.[0-9]+ ]]; then
  version="0.0.0~git$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y%m%d).$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
fi
out=$(realpath -m "${DIST:-dist}")
work=$(mktemp -d "${TMPDIR:-/tmp}/leaderrun-release.XXXXXX")
trap 'rm -rf "$work"' EXIT

nfpm=$root/.tools/nfpm-$nfpm_version
if [[ ! -x $nfpm ]]; then
  echo "release.sh: installing nfpm $nfpm_version into .tools/" >&2
  GOBIN="$work/gobin" go install "github.com/goreleaser/nfpm/v2/cmd/nfpm@$nfpm_version"
  mkdir -p .tools && mv "$work/gobin/nfpm" "$nfpm"
fi

rm -rf "$out"
mkdir -p "$out"
ldflags="-s -w -X github.com/leaderrun/leaderrun/cmd.version=$version -X github.com/leaderrun/leaderrun/cmd.commit=$commit"
build() { # GOOS GOARCH OUT
  CGO_ENABLED=0 GOOS=$1 GOARCH=$2 go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$3" .
}

# What every Linux artifact holds besides the binary: man pages, completions
# (written by this machine's build: they do not depend on the target),
# examples and the documents Debian asks for.
common=$work/common
mkdir -p "$common/man" "$common/completions" "$common/examples" "$common/doc"
go run ./scripts/man -version "$version" "$work/man"
for page in "$work"/man/*.1; do
  gzip -n -9 <"$page" >"$common/man/$(basename "$page").gz"
done
build "$(go env GOOS)" "$(go env GOARCH)" "$work/leaderrun-host"
"$work/leaderrun-host" completion bash >"$common/completions/leaderrun.bash"
"$work/leaderrun-host" completion zsh >"$common/completions/_leaderrun"
"$work/leaderrun-host" completion fish >"$common/completions/leaderrun.fish"
cp testdata/examples/* "$common/examples/"
cp packaging/copyright packaging/lintian-overrides README.md "$common/doc/"
{
  echo "leaderrun ($version-1) unstable; urgency=medium"
  echo
  echo "  * Release built from commit $commit."
  echo
  echo " -- leaderrun maintainers <leaderrun@users.noreply.github.com>  $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -n -9 >"$common/doc/changelog.Debian.gz"
find "$common" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

# tarball DIR NAME: a reproducible .tar.gz of DIR's contents under NAME/.
tarball() {
  tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
    --transform "s,^\.,$2," -C "$1" -cf - . | gzip -n -9 >"$out/$2.tar.gz"
}

for arch in amd64 arm64; do
  stage=$work/linux-$arch
  cp -a "$common" "$stage"
  build linux "$arch" "$stage/leaderrun"
  touch -d "@$SOURCE_DATE_EPOCH" "$stage/leaderrun"
  tarball "$stage" "leaderrun_${version}_linux_$arch"
  for packager in deb rpm; do
    (cd "$stage" && PKG_ARCH=$arch PKG_VERSION=$version \
      "$nfpm" package --config "$root/packaging/nfpm.yaml" --packager "$packager" --target "$out/" >/dev/null)
  done
done
mac=$work/darwin-arm64
mkdir -p "$mac"
build darwin arm64 "$mac/leaderrun"
cp README.md "$mac/"
find "$mac" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
tarball "$mac" "leaderrun_${version}_darwin_arm64"

(cd "$out" && sha256sum -- * >SHA256SUMS)
for f in "$out"/*; do
  [[ $f == */SHA256SUMS ]] && continue
  awk -v n="$(basename "$f")" -v s="$(wc -c <"$f")" 'BEGIN { printf "%-62s %6.1f MiB\n", n, s / 1048576 }'
done
echo "release.sh: $version ($commit) in $out/"
