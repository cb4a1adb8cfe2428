# driver.sh — sourced by chaos.sh and bench.sh: builds the Go driver
# ./scripts/NAME, runs it with the script's arguments in a fresh working
# directory with its own emulator state, forwards Ctrl-C / SIGTERM / SIGHUP
# to it, and stops the emulator and removes the directory even if the
# driver is killed. It exits with the driver's status.
#
#   run_driver NAME [ARG...]
run_driver() {
  local name=$1
  shift
  work=$(mktemp -d "${TMPDIR:-/tmp}/leaderrun-$name-sh.XXXXXX")
  export AZURITE_STATE_DIR="$work/azurite"
  pid=
  trap '_driver_cleanup' EXIT
  trap 'if [[ -n "$pid" ]]; then kill -TERM "$pid" 2>/dev/null || true; fi' INT TERM HUP

  go build -o "$work/$name" "./scripts/$name"
  "$work/$name" "$@" &
  pid=$!
  # wait returns early when a trapped signal arrives: wait again until the
  # driver has finished its own cleanup.
  local status=0
  while :; do
    if wait "$pid"; then status=0; else status=$?; fi
    kill -0 "$pid" 2>/dev/null || break
  done
  pid=
  exit "$status"
}

_driver_cleanup() {
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  scripts/azurite.sh stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
