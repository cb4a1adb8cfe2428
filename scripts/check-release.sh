#!/usr/bin/env bash
# check-release.sh — checks what scripts/release.sh made, with the packaging
# world's own tools: the checksums, `dpkg-deb --info/--contents` and lintian
# (no errors) on each .deb, `rpm -qpi/-qpl` on each .rpm, the files each
# package must hold, the version the binary of every artifact prints (amd64
# run here, arm64 by its ELF header), and an install of the amd64 .deb into
# a scratch root (`dpkg --root`): man page and bash completion from there.
#
#   scripts/check-release.sh [DIST]                 DIST defaults to dist/
#   scripts/check-release.sh -reproducible [DIST]   also build again and compare SHA256SUMS
#
# Needs dpkg-deb, lintian, rpm, rpm2cpio, cpio and readelf; a missing tool
# is an error (scripts/test.sh installs them under CI).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

again=false
if [[ ${1:-} == -reproducible ]]; then
  again=true
  shift
fi
dist=$(realpath "${1:-dist}")
fail() { echo "check-release.sh: $*" >&2; exit 1; }
for tool in dpkg-deb dpkg lintian rpm rpm2cpio cpio readelf; do
  command -v "$tool" >/dev/null || fail "$tool not found (apt-get install lintian rpm cpio binutils)"
done
work=$(mktemp -d "${TMPDIR:-/tmp}/leaderrun-check.XXXXXX")
trap 'rm -rf "$work"' EXIT

(cd "$dist" && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not match the artifacts"
version=$(sed -n 's/^leaderrun_\(.*\)_linux_amd64\.tar\.gz$/\1/p' < <(ls "$dist"))
[[ -n $version ]] || fail "no linux/amd64 tarball in $dist"
echo "check-release.sh: version $version"

# The paths every package holds.
want=(
  /usr/bin/leaderrun
  /usr/share/man/man1/leaderrun.1.gz
  /usr/share/man/man1/leaderrun-status.1.gz
  /usr/share/bash-completion/completions/leaderrun
  /usr/share/zsh/vendor-completions/_leaderrun
  /usr/share/fish/vendor_completions.d/leaderrun.fish
  /usr/share/doc/leaderrun/copyright
  /usr/share/doc/leaderrun/examples/report.cron
  /usr/share/doc/leaderrun/examples/scheduler.service
  /usr/share/doc/leaderrun/examples/report.service
  /usr/share/doc/leaderrun/examples/report.timer
  /usr/share/doc/leaderrun/examples/cloud-init.yaml
)
has_all() { # LISTING NAME
  for p in "${want[@]}"; do
    grep -qE "^\.?$p\$" "$1" || fail "$2 lacks $p"
  done
}

# binary_ok BIN ARCH NAME: the binary is for ARCH and, on amd64, prints the version.
binary_ok() {
  local machine
  machine=$(readelf -h "$1" | sed -n 's/^ *Machine: *//p')
  case $2 in
    amd64) [[ $machine == *X86-64* ]] || fail "$3: binary is for $machine"
      "$1" version | grep -qF "$version" || fail "$3: 'leaderrun version' does not print $version: $("$1" version)" ;;
    arm64) [[ $machine == *AArch64* ]] || fail "$3: binary is for $machine" ;;
  esac
}

for arch in amd64 arm64; do
  deb=$dist/leaderrun_${version}-1_$arch.deb
  [[ -f $deb ]] || fail "missing $(basename "$deb")"
  info=$(dpkg-deb --info "$deb")
  grep -q "^ Package: leaderrun$" <<<"$info" || fail "$deb: not package leaderrun"
  grep -q "^ Version: ${version}-1$" <<<"$info" || fail "$deb: version is not ${version}-1"
  grep -q "^ Architecture: $arch$" <<<"$info" || fail "$deb: architecture is not $arch"
  dpkg-deb --contents "$deb" | awk '{print $NF}' >"$work/deb-$arch"
  has_all "$work/deb-$arch" "$(basename "$deb")"
  lintian --tag-display-limit 0 "$deb" >"$work/lintian-$arch" 2>&1 || true
  if grep -q '^E:' "$work/lintian-$arch"; then
    cat "$work/lintian-$arch" >&2
    fail "lintian reports errors on $(basename "$deb")"
  fi
  echo "check-release.sh: $(basename "$deb"): lintian $(grep -c '^W:' "$work/lintian-$arch" || true) warnings, no errors"
  mkdir -p "$work/x-deb-$arch"
  dpkg-deb -x "$deb" "$work/x-deb-$arch"
  binary_ok "$work/x-deb-$arch/usr/bin/leaderrun" "$arch" "$(basename "$deb")"

  rpmarch=$([[ $arch == amd64 ]] && echo x86_64 || echo aarch64)
  rpmf=$dist/leaderrun-${version}-1.$rpmarch.rpm
  [[ -f $rpmf ]] || fail "missing $(basename "$rpmf")"
  rpm -qpi "$rpmf" 2>/dev/null | grep -q "^Name *: leaderrun" || fail "$rpmf: not package leaderrun"
  rpm -qpl "$rpmf" 2>/dev/null >"$work/rpm-$arch"
  has_all "$work/rpm-$arch" "$(basename "$rpmf")"
  mkdir -p "$work/x-rpm-$arch"
  # rpm2cpio exits 1 on nfpm's payload although the archive it writes is
  # whole; the binary check below tells.
  rpm2cpio "$rpmf" >"$work/rpm-$arch.cpio" || true
  (cd "$work/x-rpm-$arch" && cpio -idm --quiet --no-absolute-filenames <"$work/rpm-$arch.cpio" 2>/dev/null)
  binary_ok "$work/x-rpm-$arch/usr/bin/leaderrun" "$arch" "$(basename "$rpmf")"

  tgz=$dist/leaderrun_${version}_linux_$arch.tar.gz
  mkdir -p "$work/x-tgz-$arch"
  tar -xzf "$tgz" -C "$work/x-tgz-$arch"
  binary_ok "$work/x-tgz-$arch/leaderrun_${version}_linux_$arch/leaderrun" "$arch" "$(basename "$tgz")"
done
echo "check-release.sh: .deb, .rpm and tarballs hold the binary, man pages, completions and examples"

# An install of the amd64 .deb into a scratch root, as dpkg does it.
r=$work/root
mkdir -p "$r/var/lib/dpkg/info" "$r/var/lib/dpkg/updates" "$r/var/lib/dpkg/triggers"
touch "$r/var/lib/dpkg/status"
dpkg --root="$r" --force-script-chrootless --no-triggers -i "$dist/leaderrun_${version}-1_amd64.deb" >"$work/dpkg.log" 2>&1 ||
  { cat "$work/dpkg.log" >&2; fail "dpkg --root -i failed"; }
dpkg --root="$r" -s leaderrun | grep -q '^Status: install ok installed$' || fail "dpkg does not list leaderrun as installed"
"$r/usr/bin/leaderrun" version | grep -qF "$version" || fail "the installed binary does not print $version"
if command -v man >/dev/null; then
  MANWIDTH=80 man -l "$r/usr/share/man/man1/leaderrun.1.gz" 2>/dev/null | grep -q "leaderrun" || fail "man -l cannot render the installed page"
fi
bash -c "source '$r/usr/share/bash-completion/completions/leaderrun' && complete -p leaderrun" | grep -q __start_leaderrun ||
  fail "the installed bash completion does not register for leaderrun"
echo "check-release.sh: installed into a scratch root with dpkg --root: version, man page and bash completion work"

if $again; then
  DIST="$work/again" scripts/release.sh >/dev/null
  if ! diff <(cat "$dist/SHA256SUMS") <(cat "$work/again/SHA256SUMS") >"$work/diff"; then
    cat "$work/diff" >&2
    fail "a second build of the same commit gives other bytes"
  fi
  echo "check-release.sh: reproducible: a second build gives the same SHA256SUMS"
fi
