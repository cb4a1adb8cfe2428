#!/usr/bin/env bash
# systemd-trial.sh — the README's systemd units under a real systemd (Debian
# bookworm's, booted in a container), against the Azurite emulator, with
# what systemd recorded for each scenario and one summary table at the end.
#
#   scripts/systemd-trial.sh [-r ROUNDS] [-m MINUTES]
#   scripts/systemd-trial.sh -p          only prepare the root, then exit
#
#   -r ROUNDS   graceful handovers to time (default 5; at least 3)
#   -m MINUTES  how long report.timer and the crontabs fire (default 7, so
#               that at least one */5 occurrence and two */2 ones with
#               their retries fall after the first firing)
#
# Opt-in, never run by scripts/test.sh or CI: it needs root, Go, Node.js,
# python3 and Debian's package archive, takes about 11 minutes (the first
# time a few more), and changes the host: apt-get installs systemd-container and
# debootstrap where missing (on Debian this upgrades the host's systemd
# packages and adds `mymachines` to /etc/nsswitch.conf).
#
# What it does: debootstraps a bookworm root (minbase with systemd, dbus,
# procps and cron; about 270 MB) into .systemd-trial/root, or reuses the one
# there; builds leaderrun from this checkout into it; starts the emulator on
# the host's loopback (the container shares the host's network) and boots the
# root with systemd-nspawn. The units are testdata/examples' scheduler.service,
# report.service and report.timer as shipped, and report.cron in
# /etc/cron.d; only the credentials change (the emulator's connection string
# in an EnvironmentFile; for cron, in place of the account line). A second
# "host" is a copy of a unit with `--identity vm-b`. The programs the units
# run are stand-ins from scripts/systemd-trial/: a scheduler that takes 2 s
# to stop, one that dies of SIGTERM (`sleep infinity`), one deaf to SIGTERM,
# and a report job that logs its occurrence. The README's nightly-job
# recipes run under the container's cron too, three lines each for three
# hosts (--identity vm-a, vm-b, vm-c), their times scaled from hours to
# minutes: a job that fails its first attempt and succeeds on its retry
# (--retries 1), and one that hangs, deaf to SIGTERM (--max-runtime 50s).
# Their pings go to a listener on the host's loopback (ping-listener, in
# python3), and cron's mail to a sendmail stand-in that keeps each mail.
#
# The scenarios, and what passes: a leader and a waiting follower, the
# deputy (their Status= lines, the deputy's journal line); systemctl stop of
# the waiting follower (a clean stop: inactive, success); systemctl stop of
# the leader with each stand-in (inactive, success; the deaf one failed with
# 137 after --kill-grace), the deputy's command starting only after the old
# one is gone, timed from the journal's monotonic stamps; SIGSTOP of leaderrun under WatchdogSec (the
# command dead within 14 s and before the follower's starts, the watchdog
# restarting the unit, a few lines at most); kill -9 of leaderrun (the
# command gone within 1 s, a takeover within 20 s, Restart= bringing the unit
# back); the timers and cron for MINUTES (every firing a success, nothing
# logged under -q, each */5 occurrence run once across the three hosts);
# the nightly job retried (each */2 occurrence's attempt 1 once in the
# fleet and failed, its attempt 2 once, --retry-delay or more after, and
# succeeded, no third; `leaderrun history` naming both; their pings; no
# mail) and the hung one (each run gone within --max-runtime, --kill-grace
# and 3 s, recorded as 124, never two at once, its one ERROR line mailed by
# cron, its end ping /124 carrying the output's tail).
#
# Exit status: 0 when every row of the summary passed, 1 when a row failed,
# 2 when the trial could not run. The whole journal of the container and the
# console stay in .systemd-trial/last-run/ for reading afterwards. Everything
# it starts (the container, the emulator, its watchers) it stops by PID.
#
# No pipefail: the journal is read through `grep -m 1` and `grep -q`, which
# end before their writer, and every result is checked where it is used.
set -u

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
here=$root/scripts/systemd-trial
trial=${SYSTEMD_TRIAL_DIR:-$root/.systemd-trial}
rootfs=$trial/root
work=$trial/last-run
machine=leaderrun-trial
rounds=5
minutes=7
prepare_only=false

die() { echo "systemd-trial.sh: $*" >&2; exit 2; }
usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

while getopts 'r:m:ph' opt; do
  case $opt in
    r) rounds=$OPTARG ;;
    m) minutes=$OPTARG ;;
    p) prepare_only=true ;;
    *) usage ;;
  esac
done
[[ $rounds =~ ^[0-9]+$ && $rounds -ge 3 ]] || die "-r: ROUNDS must be a number, 3 or more"
[[ $minutes =~ ^[0-9]+$ && $minutes -ge 1 ]] || die "-m: MINUTES must be a whole number of minutes, 1 or more"
[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, systemd-nspawn, nsenter)"
[[ $(uname -s) == Linux ]] || die "needs Linux"

mkdir -p "$trial" || die "cannot create $trial"
exec 9>"$trial/lock"
flock -n 9 || die "another trial holds $trial/lock"

# ---------------------------------------------------------------- the root

# need_tools installs systemd-nspawn and debootstrap with apt-get when missing.
need_tools() {
  local pkgs=()
  command -v systemd-nspawn >/dev/null || pkgs+=(systemd-container)
  command -v debootstrap >/dev/null || pkgs+=(debootstrap)
  command -v nsenter >/dev/null && command -v setsid >/dev/null || pkgs+=(util-linux)
  [[ ${#pkgs[@]} -eq 0 ]] && return 0
  command -v apt-get >/dev/null || die "missing ${pkgs[*]} and no apt-get to install them"
  echo "systemd-trial.sh: installing ${pkgs[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${pkgs[@]}" >&2 ||
    { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${pkgs[@]}" >&2; } ||
    die "apt-get install ${pkgs[*]} failed"
}

# The packages the root needs beside minbase; a root from an earlier run
# that lacks one gets it with apt-get inside the root.
root_pkgs=(systemd systemd-sysv dbus procps cron)

need_root() {
  if [[ ! -x $rootfs/lib/systemd/systemd ]]; then
    rm -rf "$trial/root.partial"
    echo "systemd-trial.sh: debootstrap of Debian bookworm into $rootfs (about 270 MB, a few minutes)" >&2
    local inc; inc=$(IFS=,; echo "${root_pkgs[*]}")
    debootstrap --variant=minbase --include="$inc" bookworm "$trial/root.partial" http://deb.debian.org/debian \
      >"$trial/debootstrap.log" 2>&1 || die "debootstrap failed (see $trial/debootstrap.log)"
    mv "$trial/root.partial" "$rootfs" || die "cannot move the new root into place"
  fi
  local missing=() p
  for p in "${root_pkgs[@]}"; do
    chroot "$rootfs" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
  done
  if [[ ${#missing[@]} -gt 0 ]]; then
    echo "systemd-trial.sh: installing ${missing[*]} in $rootfs" >&2
    systemd-nspawn -q -D "$rootfs" --register=no --keep-unit --pipe sh -c \
      "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q ${missing[*]}" >&2 ||
      die "apt-get install ${missing[*]} in $rootfs failed"
  fi
}

need_tools
need_root
if $prepare_only; then
  echo "systemd-trial.sh: $rootfs is ready"
  exit 0
fi
command -v go >/dev/null || die "go not found: the trial builds leaderrun from this checkout"

# ------------------------------------------------- processes it starts, and their end

nspawn_pid=
ctpid=
bg_pids=() # the watchers' nsenter and the timers' sleep
azurite_started=false

# power_off PID: SIGTERM makes systemd-nspawn power its container off;
# SIGKILL after 30 s.
power_off() {
  kill -TERM "$1" 2>/dev/null
  for _ in $(seq 1 150); do kill -0 "$1" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "$1" 2>/dev/null
}

cleanup() {
  local pid
  for pid in "${bg_pids[@]}"; do kill "$pid" 2>/dev/null; done
  if [[ -n $nspawn_pid ]] && kill -0 "$nspawn_pid" 2>/dev/null; then
    if [[ -n $ctpid ]]; then
      ct_timeout=20 ct journalctl -q --no-pager -o short-monotonic >"$work/journal.txt" 2>/dev/null
    fi
    power_off "$nspawn_pid"
    wait "$nspawn_pid" 2>/dev/null
  fi
  rm -f "$trial/nspawn.pid"
  if $azurite_started; then AZURITE_STATE_DIR="$work/azurite" "$root/scripts/azurite.sh" stop; fi
}
trap cleanup EXIT
trap 'exit 2' INT TERM HUP

# What a run killed outright (SIGKILL) left running: its container and its
# emulator, by the PIDs it wrote down.
if [[ -f $trial/nspawn.pid ]]; then
  old=$(cat "$trial/nspawn.pid")
  if [[ $old =~ ^[0-9]+$ && $(cat /proc/"$old"/comm 2>/dev/null) == systemd-nspawn ]]; then
    echo "systemd-trial.sh: powering off the container an earlier run left (pid $old)" >&2
    power_off "$old"
  fi
  rm -f "$trial/nspawn.pid"
fi
if [[ -d $work/azurite ]]; then AZURITE_STATE_DIR="$work/azurite" "$root/scripts/azurite.sh" stop; fi
rm -rf "$work"
mkdir -p "$work"

# ct runs a command in the container, bounded by $ct_timeout seconds (60).
ct() {
  nsenter -t "$ctpid" -a env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin SYSTEMD_COLORS=0 \
    timeout "${ct_timeout:-60}" "$@"
}

# wait_until SECONDS WHAT COMMAND...: runs COMMAND every 0.2 s until it
# succeeds; says so and fails after SECONDS.
wait_until() {
  local limit=$1 what=$2 end=$((SECONDS + $1))
  shift 2
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= end)); then
      echo "   !! no $what within ${limit}s"
      return 1
    fi
    sleep 0.2
  done
}

# ------------------------------------------------------------------ setup

echo "== preparing: leaderrun from this checkout, the units, the emulator"
(cd "$root" && CGO_ENABLED=0 go build -o "$rootfs/usr/bin/leaderrun" .) || die "go build failed"
echo "   $("$rootfs/usr/bin/leaderrun" version 2>&1 | head -n 1)"

# The lock's descriptor is not handed on: a container or an emulator left
# by a run killed outright must not keep the next run from cleaning up.
conn=$(AZURITE_STATE_DIR="$work/azurite" "$root/scripts/azurite.sh" start 9>&-) || die "the emulator did not start"
azurite_started=true

# The monitor the nightly jobs ping: a listener on the host's loopback,
# which the container shares.
command -v python3 >/dev/null || die "python3 not found: the nightly jobs' monitor is a python3 stand-in"
mkdir -p "$work/pings"
python3 "$here/ping-listener" "$work/pings" </dev/null >"$work/pings/listener.log" 2>&1 9>&- &
bg_pids+=($!)
wait_until 10 "port from the ping listener" test -s "$work/pings/port" || die "the ping listener did not start (see $work/pings/listener.log)"
ping_url=http://127.0.0.1:$(cat "$work/pings/port")

ex=$root/testdata/examples
etc=$rootfs/etc
install -d -m 700 "$etc/leaderrun"
printf 'AZURE_STORAGE_CONNECTION_STRING="%s"\n' "$conn" >"$etc/leaderrun/scheduler.env"
cp "$etc/leaderrun/scheduler.env" "$etc/leaderrun/report.env"
chmod 600 "$etc/leaderrun/"*.env

install -d "$rootfs/usr/local/bin" "$rootfs/opt/report" "$rootfs/opt/backup"
install -m 755 "$here/report-run" "$rootfs/opt/report/run.sh"
install -m 755 "$here/report-run" "$rootfs/opt/backup/run.sh"
install -d "$rootfs/opt/nightly" "$rootfs/usr/sbin"
install -m 755 "$here/nightly-flaky" "$rootfs/opt/nightly/flaky"
install -m 755 "$here/nightly-hung" "$rootfs/opt/nightly/hung"
# cron mails a job's output through a stand-in that keeps each mail
# (without one, Debian's cron logs "No MTA installed, discarding output").
install -m 755 "$here/sendmail" "$rootfs/usr/sbin/sendmail"
rm -rf "$rootfs/var/log/cron-mail"

# use_command VARIANT puts a stand-in at /usr/local/bin/scheduler, by rename,
# so that a script already running keeps its own file.
use_command() {
  install -m 755 "$here/scheduler-$1" "$rootfs/usr/local/bin/scheduler.new" &&
    mv -f "$rootfs/usr/local/bin/scheduler.new" "$rootfs/usr/local/bin/scheduler"
}
use_command graceful

sd=$etc/systemd/system
rm -rf "$sd"/scheduler*.service "$sd"/report*.service "$sd"/report*.timer "$sd"/report*.service.d
cp "$ex/scheduler.service" "$ex/report.service" "$ex/report.timer" "$sd/"
# The second host: the same unit with another --identity.
as_vm_b() { sed 's|^ExecStart=/usr/bin/leaderrun |ExecStart=/usr/bin/leaderrun --identity vm-b |' "$1" >"$2"; grep -q -- '--identity vm-b' "$2"; }
as_vm_b "$ex/scheduler.service" "$sd/scheduler-b.service" || die "scheduler.service's ExecStart does not start with /usr/bin/leaderrun"
as_vm_b "$ex/report.service" "$sd/report-b.service" || die "report.service's ExecStart does not start with /usr/bin/leaderrun"
cp "$ex/report.timer" "$sd/report-b.timer"
# report.service names an account and no secret: the credentials come in a drop-in.
for u in report report-b; do
  install -d "$sd/$u.service.d"
  printf '[Service]\nEnvironmentFile=/etc/leaderrun/report.env\n' >"$sd/$u.service.d/credentials.conf"
done
# cron: the connection string in place of the account. The file goes in
# when the timers start, so that cron and the timers fire from the same minute.
grep -q '^AZURE_STORAGE_ACCOUNT=' "$ex/report.cron" || die "report.cron has no AZURE_STORAGE_ACCOUNT line to replace"
while IFS= read -r line; do
  if [[ $line == AZURE_STORAGE_ACCOUNT=* ]]; then line="AZURE_STORAGE_CONNECTION_STRING=$conn"; fi
  printf '%s\n' "$line"
done <"$ex/report.cron" >"$work/report.cron"
# The README's nightly-job recipes under cron, three lines each for three
# VMs, their times scaled from hours to minutes: a job that fails its
# first attempt and is retried (--retries 1; --splay 10s and --retry-delay
# 40s put the retry at the next minute's invocation, before the next */2
# occurrence), and a job that hangs (--max-runtime 50s and --kill-grace 10s:
# a run outlasts its minute, so that the next minute's invocations find it
# still going). Each job's end ping goes to the listener.
flaky_flags="--schedule '*/2 * * * *' --starting-deadline 90s --retries 1 --retry-delay 40s --splay 10s -q"
hung_flags="--schedule '* * * * *' --max-runtime 50s --kill-grace 10s --splay 10s -q"
retry_delay=40 max_runtime=50 kill_grace=10
nightly_cron() { # JOB FLAGS
  printf 'SHELL=/bin/sh\nPATH=/usr/local/bin:/usr/bin:/bin\nAZURE_STORAGE_CONNECTION_STRING=%s\nLEADERRUN_PING_URL=%s/%s\n' "$conn" "$ping_url" "$1"
  local vm
  for vm in vm-a vm-b vm-c; do
    printf '* * * * *  root  leaderrun --identity %s -l nightly/%s %s -- /opt/nightly/%s\n' "$vm" "$1" "$2" "$1"
  done
}
nightly_cron flaky "$flaky_flags" >"$work/nightly-flaky.cron"
nightly_cron hung "$hung_flags" >"$work/nightly-hung.cron"
cron_files=(report nightly-flaky nightly-hung)
install -d "$etc/cron.d"
for f in "${cron_files[@]}"; do rm -f "$etc/cron.d/$f"; done
rm -f "$rootfs/var/log/report.log"

echo "== booting $rootfs with systemd-nspawn"
# Under setsid, so that the container never reads the terminal; its journal
# lives on a tmpfs, fresh for every run.
setsid systemd-nspawn -D "$rootfs" --boot --register=no --keep-unit --console=read-only -M "$machine" \
  --tmpfs=/var/log/journal </dev/null >"$work/console.log" 2>&1 9>&- &
nspawn_pid=$!
echo "$nspawn_pid" >"$trial/nspawn.pid"

# find_ctpid sets ctpid to the container's PID 1 (as the host numbers it).
find_ctpid() {
  local queue=("$nspawn_pid") p c
  while [[ ${#queue[@]} -gt 0 ]]; do
    p=${queue[0]}
    queue=("${queue[@]:1}")
    for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do
      if grep -qE '^NSpid:[[:space:]]+[0-9]+[[:space:]]+1$' /proc/"$c"/status 2>/dev/null; then
        ctpid=$c
        return 0
      fi
      queue+=("$c")
    done
  done
  return 1
}
wait_until 30 "container's PID 1" find_ctpid || { cat "$work/console.log" >&2; die "systemd-nspawn did not start the container"; }
find_ctpid
booted() { local s; s=$(ct systemctl is-system-running 2>/dev/null); [[ $s == running || $s == degraded ]]; }
wait_until 120 "boot to multi-user" booted || { tail -n 40 "$work/console.log" >&2; die "the container did not boot"; }
echo "   $(ct systemctl --version | head -n 1), $(ct systemctl is-system-running); container PID 1 is host PID $ctpid"
ct systemctl --no-legend --failed | sed 's/^/   failed unit: /'
# Enabled as the README's `systemctl enable --now` does, but for this boot
# only. An enabled unit stays loaded when inactive, so that systemctl show
# still has its main process's end after a clean stop (an unreferenced one
# is unloaded, and shows ExecMainCode=0).
ct systemctl enable --runtime scheduler.service scheduler-b.service 2>/dev/null || die "cannot enable the scheduler units"

# ------------------------------------------------------ reading the journal

# cursor prints the journal's current end.
cursor() { ct journalctl -q -n 1 --show-cursor -o cat | sed -n 's/^-- cursor: //p' | tail -n 1; }
# jl CURSOR FILTER...: the journal's lines after CURSOR, monotonic
# timestamps. journalctl 252's --after-cursor drops the first entry that
# matches the filter when the cursor's own entry does not: the lines are
# read from the cursor on (--cursor) and those not later than its entry's
# monotonic time (the cursor's m=, in µs) left out.
jl() {
  local c=$1 m
  shift
  m=${c#*;m=}
  m=$((16#${m%%;*}))
  ct journalctl -q --no-pager -o short-monotonic --cursor="$c" "$@" | awk -v m="$m" '
    /^\[ *[0-9]+\.[0-9]+\]/ { t = $0; sub(/^\[ */, "", t); sub(/\].*/, "", t); split(t, f, "."); keep = (f[1] * 1000000 + f[2] > m) }
    keep'
}
# stamp: the monotonic seconds of the first line on stdin.
stamp() { sed -n 's/^\[ *\([0-9]*\.[0-9]*\)\].*/\1/p' | head -n 1; }
# mark_then TEXT COMMAND...: writes TEXT to the journal as the trial's own
# line, then runs COMMAND, in one process of the container, so that the
# line comes milliseconds before COMMAND (not a host round trip).
mark_then() {
  ct sh -c 'logger -t leaderrun-trial "$1" && shift && exec "$@"' mark "$@"
}
# timed_mark TEXT COMMAND...: mark_then, and prints how long COMMAND took
# in ms, timed in the container; its status is COMMAND's.
timed_mark() {
  ct bash -c 'logger -t leaderrun-trial "$1" || exit 125; shift
    t0=${EPOCHREALTIME/./}; "$@" >&2; rc=$?
    echo $(((${EPOCHREALTIME/./} - t0) / 1000)); exit $rc' mark "$@"
}
# sub A B: B - A in seconds, two decimals; "?" when either is unknown.
sub() { if [[ -n $1 && -n $2 ]]; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; else echo "?"; fi; }
# later A B: A and B known and B after A.
later() { [[ -n $1 && -n $2 ]] && awk -v a="$1" -v b="$2" 'BEGIN { exit !(b > a) }'; }
# show_lines CURSOR UNIT...: the units' journal lines since CURSOR, a long
# stretch cut in the middle.
show_lines() {
  local c=$1 u args=()
  shift
  for u in "$@"; do args+=(-u "$u"); done
  jl "$c" "${args[@]}" | awk '{ l[NR] = $0 } END { for (i = 1; i <= NR; i++) { if (NR > 60 && i == 26) { printf "      … %d lines …\n", NR - 50; i = NR - 24 } print "      " l[i] } }'
}

# started_line UNIT CURSOR: the stand-in's first "started" line since CURSOR.
started_line() { jl "$2" -u "$1" | grep -m 1 'scheduler: started pid='; }
# gone_line PID CURSOR: the watcher's line for PID since CURSOR.
gone_line() { jl "$2" -t leaderrun-trial | grep -m 1 "gone: pid $1 "; }
pid_of_line() { sed -n 's/.*scheduler: started pid=\([0-9]*\).*/\1/p'; }

# watch_gone PID LABEL: a watcher in the container writes "gone: pid PID"
# to the journal once PID has ended (or become a zombie): it looks every
# 20 ms, and its line lands 0.05-0.2 s later (0.5 s seen on a busy host),
# so that the line's stamp is an upper bound of the end: the overlap checks
# that use it err on the strict side.
watch_gone() {
  nsenter -t "$ctpid" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin timeout 900 bash -c '
    while read -r stat </proc/"$1"/stat; do
      [[ ${stat##*) } == [ZX]* ]] && break
      sleep 0.02
    done 2>/dev/null
    logger -t leaderrun-trial "gone: pid $1 ($2)"' watcher "$1" "$2" >/dev/null 2>&1 &
  bg_pids+=($!)
}

# ------------------------------------------------------ what systemd recorded

declare -A P
# props UNIT fills P with what systemd records for UNIT.
props() {
  P=()
  local k v
  while IFS='=' read -r k v; do P[$k]=$v; done < <(ct systemctl show \
    -p ActiveState,SubState,Result,ExecMainCode,ExecMainStatus,StatusText,NRestarts,MainPID "$1")
}
# main_end: how P's main process ended, in words.
main_end() {
  case ${P[ExecMainCode]:-0} in
    1) echo "exited ${P[ExecMainStatus]}" ;;
    2) echo "killed by SIG$(kill -l "${P[ExecMainStatus]}" 2>/dev/null)" ;;
    3) echo "dumped core, SIG$(kill -l "${P[ExecMainStatus]}" 2>/dev/null)" ;;
    *) if [[ ${P[ActiveState]} == active* || ${P[ActiveState]} == deactivating ]]; then echo "running"; else echo "no exit status"; fi ;;
  esac
}
# recorded UNIT prints and keeps (in P) what systemd recorded for UNIT.
recorded() {
  props "$1"
  printf '   %s: ActiveState=%s SubState=%s Result=%s ExecMainCode=%s ExecMainStatus=%s (%s)\n' "$1" \
    "${P[ActiveState]}" "${P[SubState]}" "${P[Result]}" "${P[ExecMainCode]}" "${P[ExecMainStatus]}" "$(main_end)"
}
end_of() { echo "${P[ActiveState]}, ${P[Result]}, $(main_end)"; }
state_is() { local s; s=$(ct systemctl show -p "$2" --value "$1"); [[ $s == $3 ]]; }
status_is() { state_is "$1" StatusText "$2"; }

# ------------------------------------------------------ the summary's rows

rows=()
failed_rows=0
# row SCENARIO GOT EXPECTED OK NOTE
row() {
  local verdict=pass
  if [[ $4 != true ]]; then verdict=FAIL; failed_rows=$((failed_rows + 1)); fi
  rows+=("$1|$2|$3|$verdict|$5")
  echo "   -> $verdict: $1"
}

units=(scheduler.service scheduler-b.service)
other() { if [[ $1 == scheduler.service ]]; then echo scheduler-b.service; else echo scheduler.service; fi; }
leader_child=

# start_leader UNIT: starts UNIT, which must lead and start its command;
# times systemctl start (READY=1 comes at once) and watches the command.
start_leader() {
  local c line
  c=$(cursor)
  start_ms=$(timed_mark "systemctl start $1" systemctl start "$1") || return 1
  wait_until 30 "command started by $1" started_line "$1" "$c" || return 1
  wait_until 10 "leader status from $1" status_is "$1" 'leader*' || return 1
  line=$(started_line "$1" "$c")
  leader_child=$(pid_of_line <<<"$line")
  watch_gone "$leader_child" "$1's command"
}
# start_follower UNIT: starts UNIT, which must wait as the deputy (the one
# follower that polls every 250 ms): its status and its journal say so.
start_follower() {
  local c
  c=$(cursor)
  ct systemctl start "$1" || return 1
  wait_until 30 "waiting status from $1" status_is "$1" 'waiting as the deputy*' || return 1
  deputy_line() { jl "$c" -u "$1" | grep -q 'standing by as the deputy'; }
  wait_until 10 "'standing by as the deputy' from $1" deputy_line "$1"
}
# stop_all stops both scheduler units, the waiting one first, and forgets
# their failures.
stop_all() {
  local u
  for u in "${units[@]}"; do status_is "$u" 'waiting*' && ct_timeout=60 ct systemctl stop "$u"; done
  for u in "${units[@]}"; do ct_timeout=60 ct systemctl stop "$u"; done
  ct systemctl reset-failed "${units[@]}" 2>/dev/null
  return 0
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "?"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
minmedmax() { # numbers on stdin
  local all; all=$(grep -E '^-?[0-9.]+$')
  [[ -n $all ]] || { echo "no figures"; return; }
  printf 'min %s s, median %s s, max %s s (%d rounds)' "$(sort -n <<<"$all" | head -n 1)" "$(median <<<"$all")" \
    "$(sort -n <<<"$all" | tail -n 1)" "$(wc -l <<<"$all")"
}

# ------------------------------------------------------ the timers run meanwhile

echo "== report.timer and report-b.timer (two hosts) and /etc/cron.d/report (a third), for ${minutes} min from now;"
echo "   /etc/cron.d/nightly-flaky and nightly-hung (three hosts each) as long"
for f in "${cron_files[@]}"; do install -m 600 "$work/$f.cron" "$etc/cron.d/$f"; done
ct systemctl start cron.service report.timer report-b.timer || die "cannot start the timers and cron"
timers_from=$(date +%s)
timer_cursor=$(cursor)

# ------------------------------------------------------ 1. a leader and a follower

echo
echo "== 1. scheduler.service starts and leads; scheduler-b.service (vm-b) waits"
c1=$(cursor)
ok=true
start_leader scheduler.service || ok=false
start1_ms=${start_ms:-?}
start_follower scheduler-b.service || ok=false
# The follower, the deputy, polls every 250 ms: 6 s of polls in which it
# must not run.
sleep 6
started_line scheduler-b.service "$c1" >/dev/null && { echo "   !! scheduler-b.service ran its command while the other led"; ok=false; }
recorded scheduler.service; st_a=${P[StatusText]}; got="${P[ActiveState]}/${P[SubState]}"
[[ ${P[ActiveState]} == active && $st_a == leader* ]] || ok=false
recorded scheduler-b.service; st_b=${P[StatusText]}; got+=" and ${P[ActiveState]}/${P[SubState]}"
[[ ${P[ActiveState]} == active && $st_b == "waiting as the deputy"* ]] || ok=false
echo "   systemctl start scheduler.service returned in ${start1_ms} ms"
echo "   Status of scheduler.service: $st_a"
echo "   Status of scheduler-b.service: $st_b"
show_lines "$c1" scheduler.service scheduler-b.service
row "leader starts, follower waits" "$got" "active/running and active/running; Status 'leader: …' and 'waiting as the deputy: …'; the follower never runs" $ok "start returned in ${start1_ms} ms"

# ------------------------------------------------------ 2. stop of a waiting follower

echo
echo "== 2. systemctl stop scheduler-b.service while it waits"
c2=$(cursor)
ct_timeout=60 ct systemctl stop scheduler-b.service
recorded scheduler-b.service
show_lines "$c2" scheduler-b.service
errors=$(jl "$c2" -u scheduler-b.service | grep -c '\[ERROR\]')
note="$errors ERROR lines"
ok=false
[[ ${P[ActiveState]} == inactive && ${P[Result]} == success && $(main_end) == "killed by SIGTERM" && $errors -eq 0 ]] && ok=true
row "stop of the waiting follower" "$(end_of)" "inactive, success, killed by SIGTERM (a clean stop); no ERROR line" $ok "$note"
ct systemctl reset-failed scheduler-b.service 2>/dev/null

# ------------------------------------------------------ 3. stop of the leader

# handover N LEADER EXPECT_ACTIVE EXPECT_RESULT [EXPECT_MAIN]: one round:
# systemctl stop LEADER while the other unit waits; the other must start
# its command after LEADER's is gone. Appends the takeover figures to
# from_dead and from_call, and clears round_ok when a check fails.
handover() {
  local n=$1 leader=$2 follower c line t_call t_dead t_start t_gone rc took old_child=$leader_child
  follower=$(other "$leader")
  c=$(cursor)
  took=$(ct_timeout=90 timed_mark "round $n: systemctl stop $leader" systemctl stop "$leader")
  rc=$?
  took=$(awk -v ms="$took" 'BEGIN { printf "%.2f", ms / 1000 }')
  wait_until 40 "command started by $follower" started_line "$follower" "$c" || round_ok=false
  recorded "$leader"
  if [[ ${P[ActiveState]} != "$3" || ${P[Result]} != "$4" ]] || [[ -n ${5:-} && $(main_end) != "$5" ]]; then
    round_ok=false
  fi
  round_ends+=("$(end_of)")
  t_call=$(jl "$c" -t leaderrun-trial | grep -m 1 "round $n: systemctl stop" | stamp)
  t_dead=$(jl "$c" -u "$leader" | grep -m 1 -E "$leader: (Main process exited|Deactivated successfully|Failed with result)" | stamp)
  line=$(started_line "$follower" "$c")
  t_start=$(stamp <<<"$line")
  t_gone=$(gone_line "$old_child" "$c" | stamp)
  show_lines "$c" "$leader" "$follower"
  printf '   round %s: systemctl stop took %s s (rc %s); old command gone %s s after the call; new command started %s s after the old unit died, %s s after the call, %s s after the old command was gone\n' \
    "$n" "$took" "$rc" "$(sub "$t_call" "$t_gone")" "$(sub "$t_dead" "$t_start")" "$(sub "$t_call" "$t_start")" "$(sub "$t_gone" "$t_start")"
  if ! later "$t_gone" "$t_start"; then
    echo "   !! the new command did not start after the old one was gone (overlap, or a line missing)"
    round_ok=false
  fi
  from_dead+=("$(sub "$t_dead" "$t_start")")
  from_call+=("$(sub "$t_call" "$t_start")")
  leader_child=$(pid_of_line <<<"$line")
  [[ -n $leader_child ]] && watch_gone "$leader_child" "$follower's command"
}

# variant NAME ROUNDS EXPECT_ACTIVE EXPECT_RESULT EXPECT_MAIN WANT_TEXT: stop
# the leader ROUNDS times with the stand-in NAME; a stopped leader comes
# back as the follower.
declare -A figures
variant() {
  local name=$1 n=$2 leader=scheduler.service i
  echo
  echo "== 3. systemctl stop of the leader: the command $name, $n rounds"
  stop_all
  use_command "$name"
  round_ok=true
  round_ends=()
  from_dead=()
  from_call=()
  if start_leader "$leader" && start_follower "$(other "$leader")"; then
    for ((i = 1; i <= n; i++)); do
      echo "-- round $i/$n: systemctl stop $leader"
      handover "$i" "$leader" "$3" "$4" "$5"
      leader=$(other "$leader")
      if ((i < n)); then start_follower "$(other "$leader")" || round_ok=false; fi
    done
  else
    round_ok=false
  fi
  figures[$name.dead]=$(printf '%s\n' "${from_dead[@]}" | minmedmax)
  figures[$name.call]=$(printf '%s\n' "${from_call[@]}" | minmedmax)
  local ends; ends=$(printf '%s\n' "${round_ends[@]}" | sort | uniq -c | awk '{ $1 = $1 "×"; print }' | paste -sd ';')
  row "stop of the leader, command $name" "$ends" "$6" $round_ok "takeover after the old unit died: ${figures[$name.dead]}"
}

variant graceful "$rounds" inactive success "exited 0" "inactive, success, exited 0; the deputy's command starts after the old one is gone"
variant sleep 2 inactive success "killed by SIGTERM" "inactive, success, killed by SIGTERM (a clean stop)"
variant deaf 1 failed exit-code "exited 137" "failed, exit-code, exited 137 after --kill-grace (20 s)"
stop_all
use_command graceful

# ------------------------------------------------------ 4. SIGSTOP under the watchdog

echo
echo "== 4. SIGSTOP of the leader's leaderrun under WatchdogSec=30s"
ok=true
note=
if start_leader scheduler.service && start_follower scheduler-b.service; then
  c4=$(cursor)
  props scheduler.service
  main=${P[MainPID]}
  restarts=${P[NRestarts]}
  child=$leader_child
  mark_then "SIGSTOP to leaderrun, pid $main, main process of scheduler.service" kill -STOP "$main"
  wait_until 40 "end of the stopped leader's command" gone_line "$child" "$c4" || ok=false
  wait_until 40 "command started by scheduler-b.service" started_line scheduler-b.service "$c4" || ok=false
  watchdog_fired() { jl "$c4" -u scheduler.service | grep -q 'Watchdog timeout'; }
  wait_until 60 "watchdog timeout" watchdog_fired || ok=false
  # What systemd recorded before Restart= brings the unit back (RestartSec=5s).
  if wait_until 30 "auto-restart" state_is scheduler.service SubState auto-restart; then
    recorded scheduler.service
    at_restart=$(end_of)
    [[ ${P[Result]} == watchdog ]] || ok=false
  else
    at_restart="no auto-restart seen"
    ok=false
  fi
  wait_until 30 "restart of scheduler.service" state_is scheduler.service ActiveState active || ok=false
  recorded scheduler.service
  [[ ${P[NRestarts]} -gt $restarts ]] || { echo "   !! NRestarts did not grow"; ok=false; }
  t_stop=$(jl "$c4" -t leaderrun-trial | grep -m 1 'SIGSTOP to leaderrun' | stamp)
  t_gone=$(gone_line "$child" "$c4" | stamp)
  t_start=$(started_line scheduler-b.service "$c4" | stamp)
  t_dog=$(jl "$c4" -u scheduler.service | grep -m 1 'Watchdog timeout' | stamp)
  later "$t_gone" "$t_start" || { echo "   !! the follower's command did not start after the stopped leader's was gone"; ok=false; }
  # The last renewal came before SIGSTOP, and the rule has the group dead
  # 14 s after it (the guard's kill deadline, 13.5 s, and 0.5 s to land).
  awk -v g="$(sub "$t_stop" "$t_gone")" 'BEGIN { exit !(g != "?" && g <= 14) }' || { echo "   !! the command lived more than 14 s after SIGSTOP"; ok=false; }
  # leaderrun's own lines from the watchdog's signal to its end.
  jl "$c4" -u scheduler.service | awk -v pid="$main" '/Killing process .* with signal/ { on = 1; next } on && index($0, "[" pid "]:") { print }' >"$work/watchdog-lines.txt"
  dump=$(wc -l <"$work/watchdog-lines.txt")
  jl "$c4" -u scheduler.service | grep -E 'Watchdog timeout|Killing process|Main process exited|Failed with result|Scheduled restart' | sed 's/^/      /'
  echo "   leaderrun's last lines (${dump} after the watchdog's signal; all in $work/watchdog-lines.txt):"
  tail -n 12 "$work/watchdog-lines.txt" | sed 's/^/      /'
  [[ $dump -le 10 ]] || ok=false
  printf '   after SIGSTOP: command gone %s s, follower'"'"'s command started %s s, watchdog %s s\n' \
    "$(sub "$t_stop" "$t_gone")" "$(sub "$t_stop" "$t_start")" "$(sub "$t_stop" "$t_dog")"
  note="command gone $(sub "$t_stop" "$t_gone") s after SIGSTOP, follower's $(sub "$t_stop" "$t_start") s; $dump lines after SIGABRT"
  got="$at_restart; then ${P[ActiveState]}/${P[SubState]}"
else
  ok=false
  got="did not start"
fi
row "SIGSTOP of leaderrun, watchdog" "$got" "command dead ≤ 14 s after SIGSTOP, before the follower's starts; watchdog; restarted; a few lines (≤ 10)" $ok "$note"
stop_all

# ------------------------------------------------------ 5. kill -9

echo
echo "== 5. kill -9 of the leader's main process"
ok=true
note=
if start_leader scheduler.service && start_follower scheduler-b.service; then
  c5=$(cursor)
  props scheduler.service
  main=${P[MainPID]}
  child=$leader_child
  mark_then "SIGKILL to leaderrun, pid $main, main process of scheduler.service" kill -KILL "$main"
  if wait_until 20 "auto-restart" state_is scheduler.service SubState auto-restart; then
    recorded scheduler.service
    at_restart=$(end_of)
    [[ ${P[Result]} == signal && $(main_end) == "killed by SIGKILL" ]] || ok=false
  else
    at_restart="no auto-restart seen"
    ok=false
  fi
  wait_until 10 "end of the killed leader's command" gone_line "$child" "$c5" || ok=false
  new_leader() { started_line scheduler-b.service "$c5" || started_line scheduler.service "$c5"; }
  wait_until 40 "a new leader's command" new_leader || ok=false
  wait_until 30 "restart of scheduler.service" state_is scheduler.service ActiveState active || ok=false
  recorded scheduler.service
  show_lines "$c5" scheduler.service scheduler-b.service
  t_kill=$(jl "$c5" -t leaderrun-trial | grep -m 1 'SIGKILL to leaderrun' | stamp)
  t_gone=$(gone_line "$child" "$c5" | stamp)
  t_start=$( { started_line scheduler-b.service "$c5" | stamp; started_line scheduler.service "$c5" | stamp; } | sort -n | head -n 1)
  later "$t_gone" "$t_start" || { echo "   !! the new command did not start after the killed leader's was gone"; ok=false; }
  gone_after=$(sub "$t_kill" "$t_gone")
  takeover=$(sub "$t_kill" "$t_start")
  awk -v g="$gone_after" 'BEGIN { exit !(g != "?" && g <= 1) }' || { echo "   !! the command outlived leaderrun by more than 1 s"; ok=false; }
  # One lease duration (15 s) after the last renewal, plus the deputy's
  # poll (0.25 s), plus slack.
  awk -v t="$takeover" 'BEGIN { exit !(t != "?" && t <= 20) }' || { echo "   !! no takeover within 20 s"; ok=false; }
  echo "   after kill -9: command gone ${gone_after} s, new leader's command started ${takeover} s"
  note="command gone ${gone_after} s after kill -9, takeover ${takeover} s"
  got="$at_restart; then ${P[ActiveState]}/${P[SubState]}"
else
  ok=false
  got="did not start"
fi
row "kill -9 of leaderrun" "$got" "signal (SIGKILL); command gone ≤ 1 s; takeover ≤ 20 s; restarted" $ok "$note"
stop_all

# ------------------------------------------------------ 6. the timer and cron

echo
left=$((timers_from + minutes * 60 - $(date +%s)))
if ((left > 0)); then
  echo "== 6. the timers and cron: waiting ${left} s more"
  sleep "$left" &
  bg_pids+=($!)
  wait $! # a signal ends the wait at once, and the trap stops everything
fi
# cron reads /etc/cron.d again at the minute, before it fires: the files
# are taken away between the 5th and the 50th second of a minute, so that
# the last firing was at that minute's start, and no later one comes.
until (( $(date +%s) % 60 >= 5 && $(date +%s) % 60 <= 50 )); do sleep 1; done
for f in "${cron_files[@]}"; do rm -f "$etc/cron.d/$f"; done
ct systemctl stop report.timer report-b.timer
timers_to=$(date +%s)
last_firing=$((timers_to / 60 * 60))
# A firing under way ends by itself: --splay 30s and a job of 3 s; a hung
# run, --splay 10s and 50 s + 10 s.
idle() {
  state_is report.service ActiveState inactive && state_is report-b.service ActiveState inactive &&
    ! ct pgrep -f 'leaderrun .*-l (cron|nightly)/|/opt/nightly/' >/dev/null
}
wait_until 120 "end of the last firings" idle
ct systemctl stop cron.service
echo "== 6. report.timer, report-b.timer and /etc/cron.d/report for $(((timers_to - timers_from) / 60)) min $(((timers_to - timers_from) % 60)) s"
jl "$timer_cursor" -u report.service -u report-b.service >"$work/timer-lines.txt"
jl "$timer_cursor" -t report-run >"$work/runs.txt"
jl "$timer_cursor" -u cron.service >"$work/cron-lines.txt"
ok=true
fired=0
for u in report report-b; do
  starts=$(grep -cF "Starting $u.service" "$work/timer-lines.txt")
  good=$(grep -cF "$u.service: Deactivated successfully" "$work/timer-lines.txt")
  bad=$(grep -cF "$u.service: Failed with result" "$work/timer-lines.txt")
  echo "   $u.service: $starts firings, $good Deactivated successfully, $bad failed"
  fired=$((fired + starts))
  [[ $starts -ge $((minutes - 1)) && $good -eq $starts && $bad -eq 0 ]] || ok=false
done
quiet=$(grep -c ' leaderrun\[' "$work/timer-lines.txt")
echo "   leaderrun's own lines in the timers' journal (-q): $quiet"
[[ $quiet -eq 0 ]] || ok=false
cron_runs=$(grep -cE 'CMD \( *leaderrun -l cron/report' "$work/cron-lines.txt")
jl "$timer_cursor" -t cron-mail >"$work/mails.txt"
mailed=$(grep -cE 'subject=Cron <[^>]*> +leaderrun -l cron/report ' "$work/mails.txt")
echo "   cron: $cron_runs firings of the cron/report line, $mailed with output (mailed)"
echo "   /var/log/report.log: $(wc -c <"$rootfs/var/log/report.log" 2>/dev/null || echo 0) bytes"
echo "   the runs (job, occurrence, holder, unit):"
sed 's/^/      /' "$work/runs.txt"
row "report.timer, every minute, two hosts" "$fired firings" "every firing Deactivated successfully; nothing logged under -q" $ok ""

# One run per occurrence of */5 across the three hosts: every occurrence
# after the first firing (the first invocation makes the lease blob, and an
# occurrence due before that never runs) up to the last firing ran exactly
# once, and no other.
ok=true
first_fire=$(((timers_from / 60 + 1) * 60))
want=()
for ((t = (first_fire / 300 + 1) * 300; t <= timers_to - 2; t += 300)); do want+=("$(date -u -d "@$t" +%Y-%m-%dT%H:%M:%SZ)"); done
[[ ${#want[@]} -gt 0 ]] || { echo "   !! no */5 occurrence fell in the window: run longer (-m)"; ok=false; }
for o in "${want[@]}"; do
  n=$(grep -c "job=cron/report occurrence=$o " "$work/runs.txt")
  echo "   occurrence $o: $n run(s)"
  [[ $n -eq 1 ]] || ok=false
done
extra=$(grep 'job=cron/report ' "$work/runs.txt" | sed 's/.*occurrence=\([^ ]*\).*/\1/' | sort -u | grep -vxF -f <(printf '%s\n' "${want[@]}") || true)
[[ -z $extra ]] || { echo "   !! runs of other occurrences: $extra"; ok=false; }
[[ $mailed -eq 0 ]] || ok=false
row "report: one run per occurrence" "${#want[@]} occurrences, $(grep -c 'job=cron/report ' "$work/runs.txt") runs" "each occurrence once across 3 hosts; cron mails nothing" $ok "cron fired $cron_runs times"

# ------------------------------------------------------ 7. the nightly jobs under cron

echo
echo "== 7. the nightly jobs under cron, three hosts each (/etc/cron.d/nightly-flaky and nightly-hung)"
jl "$timer_cursor" -t nightly-flaky >"$work/flaky.txt"
jl "$timer_cursor" -t nightly-hung >"$work/hung.txt"
touch "$work/pings/pings.txt"
# history_of NAME: leaderrun history of the lease NAME, uncut.
history_of() { env -i PATH=/usr/bin:/bin COLUMNS=250 AZURE_STORAGE_CONNECTION_STRING="$conn" "$rootfs/usr/bin/leaderrun" history -l "$1" 2>&1; }
# pings_to PATH_RE: the listener's lines whose path matches PATH_RE.
pings_to() { awk -v re="$1" '$3 ~ re' "$work/pings/pings.txt"; }
# mails_of JOB: the mail stand-in's lines for the cron lines of nightly/JOB.
mails_of() { grep -E "subject=Cron <[^>]*> +leaderrun --identity vm-. -l nightly/$1 " "$work/mails.txt"; }
no_mta=$(grep -c 'No MTA installed' "$work/cron-lines.txt")
# cron's lines beside its CMD lines (the unit's journal also holds the
# jobs' own and the mail stand-in's): PAM's session lines (and pam_env's
# word on the root's missing /etc/default/locale), counted; any other, shown.
pam='pam_unix\(cron:session\): session (opened|closed)|pam_env\(cron:session\): Unable to open env file: /etc/default/locale'
echo "   cron's lines beside its $(grep -c 'CMD (' "$work/cron-lines.txt") CMD lines: $(grep -cE "$pam" "$work/cron-lines.txt") of PAM's sessions, and these:"
grep -E ' (cron|CRON)\[' "$work/cron-lines.txt" | grep -v 'CMD (' | grep -vE "$pam" | sed 's/^/      /'

# The job that fails, then is retried. Every */2 occurrence after the
# first firing (which makes the lease blob) whose retry's minute came
# before the files were taken away.
ok=true
history_of nightly/flaky >"$work/flaky-history.txt"
echo "   leaderrun history -l nightly/flaky:"
sed 's/^/      /' "$work/flaky-history.txt"
want=()
for ((t = (first_fire / 120 + 1) * 120; t + 60 <= last_firing; t += 120)); do want+=("$(date -u -d "@$t" +%Y-%m-%dT%H:%M:%SZ)"); done
[[ ${#want[@]} -ge 2 ]] || { echo "   !! fewer than two */2 occurrences fell in the window: run longer (-m)"; ok=false; }
gaps=()
for o in "${want[@]}"; do
  a1=$(grep -c "start: occurrence=$o attempt=1 trigger=schedule " "$work/flaky.txt")
  a2=$(grep -c "start: occurrence=$o attempt=2 trigger=retry " "$work/flaky.txt")
  e1=$(grep -m 1 "end: occurrence=$o attempt=1 .* exit=1" "$work/flaky.txt")
  s2=$(grep -m 1 "start: occurrence=$o attempt=2 " "$work/flaky.txt")
  e2=$(grep -c "end: occurrence=$o attempt=2 .* exit=0" "$work/flaky.txt")
  gap=$(sub "$(stamp <<<"$e1")" "$(stamp <<<"$s2")")
  gaps+=("$gap")
  m=${o%:00Z}Z
  h1=$(grep -c "exited 1 .*schedule $m\$" "$work/flaky-history.txt")
  h2=$(grep -c "exited 0 .*retry 2 of $m\$" "$work/flaky-history.txt")
  printf '   occurrence %s: attempt 1 ran %s time(s) (%s), attempt 2 %s time(s) (%s), %s s after attempt 1 ended, %s exit 0; history: %s schedule exited 1, %s retry 2 exited 0\n' \
    "$o" "$a1" "$(sed -n 's/.*identity=\([^ ]*\).*/\1/p' <<<"$e1")" "$a2" "$(sed -n 's/.*identity=\([^ ]*\).*/\1/p' <<<"$s2")" "$gap" "$e2" "$h1" "$h2"
  [[ $a1 -eq 1 && -n $e1 && $a2 -eq 1 && $e2 -eq 1 && $h1 -eq 1 && $h2 -eq 1 ]] || ok=false
  awk -v g="$gap" -v d="$retry_delay" 'BEGIN { exit !(g != "?" && g >= d) }' || { echo "   !! the retry of $o came less than ${retry_delay} s after attempt 1 ended"; ok=false; }
done
# Over every occurrence, the window's edges included: no attempt twice,
# no third attempt.
twice=$(grep -o 'start: occurrence=[^ ]* attempt=[0-9]*' "$work/flaky.txt" | sort | uniq -d)
[[ -z $twice ]] || { echo "   !! attempts that ran twice: $twice"; ok=false; }
third=$(grep -c 'start: .* attempt=[3-9]' "$work/flaky.txt")
[[ $third -eq 0 ]] || { echo "   !! $third third attempts"; ok=false; }
starts=$(grep -c 'start: ' "$work/flaky.txt")
failed1=$(grep -c 'end: .* attempt=1 .* exit=1' "$work/flaky.txt")
good2=$(grep -c 'end: .* attempt=2 .* exit=0' "$work/flaky.txt")
p_start=$(pings_to '^/flaky/start' | wc -l)
p_fail=$(pings_to '^/flaky/1([?]|$)' | wc -l)
p_ok=$(pings_to '^/flaky([?]|$)' | wc -l)
p_other=$(pings_to '^/flaky' | awk '$3 !~ /^\/flaky(\/start|\/1)?([?]|$)/' | wc -l)
flaky_mails=$(mails_of flaky | wc -l)
echo "   $starts attempts in all; pings: $p_start start, $p_fail /1, $p_ok success, $p_other other; mails from the nightly/flaky lines: $flaky_mails"
[[ $p_start -eq $starts && $p_fail -eq $failed1 && $p_ok -eq $good2 && $p_other -eq 0 && $flaky_mails -eq 0 && $no_mta -eq 0 ]] || ok=false
figures[retry]=$(printf '%s\n' "${gaps[@]}" | minmedmax | sed 's/rounds/occurrences/')
row "nightly job under cron, --retries 1" "${#want[@]} occurrences, $starts attempts" \
  "each occurrence: attempt 1 once in the fleet, exit 1; attempt 2 once, ≥ ${retry_delay} s later, exit 0; no third; history 'schedule …', 'retry 2 of …'; pings; no mail" \
  $ok "retry after attempt 1's end: ${figures[retry]}"

# The job that hangs: every run started is stopped at --max-runtime,
# killed after --kill-grace, recorded as 124, and the next starts only
# after it is gone.
ok=true
history_of nightly/hung >"$work/hung-history.txt"
echo "   leaderrun history -l nightly/hung:"
sed 's/^/      /' "$work/hung-history.txt"
runs=0
lasted=()
prev_gone=
while IFS= read -r line; do
  runs=$((runs + 1))
  pid=${line##*pid=}
  occ=$(sed -n 's/.*occurrence=\([^ ]*\).*/\1/p' <<<"$line")
  t0=$(stamp <<<"$line")
  gone=$(grep -m 1 "gone: .* pid=$pid\$" "$work/hung.txt")
  t1=$(stamp <<<"$gone")
  d=$(sub "$t0" "$t1")
  lasted+=("$d")
  echo "   run of $occ on $(sed -n 's/.*identity=\([^ ]*\).*/\1/p' <<<"$line"): gone $d s after its start, $(sub "$prev_gone" "$t0") s after the previous run was gone"
  awk -v d="$d" -v lo="$max_runtime" -v hi="$((max_runtime + kill_grace + 3))" 'BEGIN { exit !(d != "?" && d >= lo && d <= hi) }' ||
    { echo "   !! not gone within ${max_runtime} s + ${kill_grace} s + 3 s of its start"; ok=false; }
  if [[ -n $prev_gone ]] && ! later "$prev_gone" "$t0"; then echo "   !! started before the previous run was gone"; ok=false; fi
  prev_gone=$t1
done < <(grep 'start: ' "$work/hung.txt")
[[ $runs -ge 2 ]] || { echo "   !! fewer than two runs of the hung job"; ok=false; }
twice=$(grep -o 'start: occurrence=[^ ]*' "$work/hung.txt" | sort | uniq -d)
[[ -z $twice ]] || { echo "   !! occurrences that ran twice: $twice"; ok=false; }
h124=$(grep -c 'exited 124 ' "$work/hung-history.txt")
hall=$(grep -c ' schedule ' "$work/hung-history.txt")
hung_fired=$(grep -cE 'CMD \( *leaderrun --identity vm-. -l nightly/hung ' "$work/cron-lines.txt")
# Each run mails its output and leaderrun's one ERROR line; no other line
# of leaderrun's reaches cron.
hung_mails=$(mails_of hung | wc -l)
mail_ok=0
while IFS= read -r f; do
  body=$rootfs/var/log/cron-mail/$f
  n=$(grep -cE '^[0-9-]+T[0-9:.]+Z \[[A-Z]+\] ' "$body")
  if [[ $n -eq 1 ]] && grep -qE '\[ERROR\] leaderrun: max runtime reached \('"$max_runtime"'s\); the command was stopped$' "$body"; then
    mail_ok=$((mail_ok + 1))
  else
    echo "   !! mail $f:"; sed 's/^/      /' "$body"
  fi
done < <(mails_of hung | sed -n 's/.*file=\([^ ]*\).*/\1/p')
first_mail=$(mails_of hung | sed -n '1s/.*file=\([^ ]*\).*/\1/p')
if [[ -n $first_mail ]]; then
  echo "   a mail from the nightly/hung lines (the job's output, then leaderrun's line):"
  sed -n '/^$/,$p' "$rootfs/var/log/cron-mail/$first_mail" | sed '1d; s/^/      /'
fi
p_start=$(pings_to '^/hung/start' | wc -l)
p_124=$(pings_to '^/hung/124([?]|$)' | wc -l)
p_other=$(pings_to '^/hung' | awk '$3 !~ /^\/hung\/(start|124)([?]|$)/' | wc -l)
tail_ok=0
while read -r body; do
  grep -q 'exit=124' "$work/pings/$body" && grep -q '^hung: SIGTERM ignored' "$work/pings/$body" && tail_ok=$((tail_ok + 1))
done < <(pings_to '^/hung/124' | awk '{ print $5 }')
first_ping=$(pings_to '^/hung/124' | awk 'NR == 1 { print $5 }')
[[ -n $first_ping ]] && { echo "   an end ping /hung/124, its body:"; sed 's/^/      /' "$work/pings/$first_ping"; }
echo "   cron fired the nightly/hung lines $hung_fired times; $runs runs, $h124 of $hall in history exited 124; $hung_mails mails, $mail_ok with leaderrun's one ERROR line alone; pings: $p_start start, $p_124 /124 ($tail_ok with the output's tail), $p_other other"
[[ $h124 -eq $runs && $hall -eq $runs && $hung_mails -eq $runs && $mail_ok -eq $runs && $p_start -eq $runs && $p_124 -eq $runs && $tail_ok -eq $runs && $p_other -eq 0 ]] || ok=false
figures[hung]=$(printf '%s\n' "${lasted[@]}" | minmedmax | sed 's/rounds/runs/')
row "hung job under cron, --max-runtime 50s" "$runs runs, $h124 exited 124" \
  "each run gone ≤ ${max_runtime} s + ${kill_grace} s + 3 s after its start, exit 124; never two at once; one ERROR line mailed per run; end ping /124 with the output's tail" \
  $ok "start to gone: ${figures[hung]}"

# ------------------------------------------------------ summary

echo
echo "== takeover of the graceful stop (scheduler stand-in that stops in 2 s), journal's monotonic timestamps"
echo "   from the old unit's death to the new leader's command: ${figures[graceful.dead]}"
echo "   from the systemctl stop call:                          ${figures[graceful.call]}"
echo "   command dying of SIGTERM, from death: ${figures[sleep.dead]}; from the call: ${figures[sleep.call]}"
echo "   command deaf to SIGTERM, from death:  ${figures[deaf.dead]}; from the call: ${figures[deaf.call]}"
echo "   nightly/flaky, attempt 2's start after attempt 1's end (--retry-delay ${retry_delay}s): ${figures[retry]}"
echo "   nightly/hung, a run's start to its end (--max-runtime ${max_runtime}s, --kill-grace ${kill_grace}s): ${figures[hung]}"
echo
echo "== summary ($(ct systemctl --version | head -n 1), leaderrun $(git -C "$root" describe --always --dirty 2>/dev/null))"
{
  echo "scenario|unit's end (ActiveState, Result, main process)|expected|verdict|notes"
  printf '%s\n' "${rows[@]}"
} | awk -F'|' '{ printf "%-40s | %-58s | %-7s | %s\n", $1, $2, $4, $5; if (NR > 1) printf "%-40s   expected: %s\n", "", $3 }'
echo
if ((failed_rows > 0)); then
  echo "systemd-trial.sh: $failed_rows of ${#rows[@]} rows failed (the journal: $work/journal.txt)"
  exit 1
fi
echo "systemd-trial.sh: all ${#rows[@]} rows passed"
exit 0
