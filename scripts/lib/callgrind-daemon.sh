# Shared by the scripts that record the release logshipd under callgrind (order-file.sh, intake-instructions.sh):
# a work directory removed at exit, waits with a deadline, a local `logctl receive` to deliver to, and the daemon
# under callgrind, its dumps asked for by name. Sourced after `cd` to the repository, with SCRIPT (the name its
# messages start with) and BIN_PATH (the release build's bin directory) set. Needs valgrind and binutils' strip.

work=$(mktemp -d "/tmp/logshipd-$SCRIPT.XXXXXX")
receiver=""
daemon=""
# Other background processes the script starts, stopped at exit.
helpers=()
cleanup() {
  # Killed, not stopped: callgrind 3.19 crashes when logshipd stops under it (an internal SIGSEGV, a permission
  # fault at an address in `.rodata`, which ProgramPages makes read-only), and nothing after the dumps counts.
  [ -n "$daemon" ] && { kill -KILL "$daemon"; wait "$daemon"; } 2> /dev/null || true
  for pid in "$receiver" "${helpers[@]}"; do
    [ -n "$pid" ] && kill "$pid" 2> /dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

# Waits up to $1 seconds for the command after it to succeed.
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ $SECONDS -lt "$deadline" ] || { echo "$SCRIPT: timed out waiting for: $*" >&2; exit 1; }
    sleep 0.2
  done
}

# Starts `logctl receive` on a free loopback port and sets `url` to post to it.
start_receiver() {
  "$BIN_PATH/logctl" receive --listen 127.0.0.1:0 --quiet > /dev/null 2> "$work/receiver.log" &
  receiver=$!
  wait_for 10 grep -q "listening on" "$work/receiver.log"
  url=$(grep -o "http://[^ ]*" "$work/receiver.log")
}

# Starts logshipd under callgrind with config/logshipd.yaml, sockets and spool in the work directory, posting to
# `url`, and the environment assignments given; its dumps are $work/callgrind.out.N, its output $work/daemon.log.
start_daemon() {
  # valgrind 3.19 cannot read the DWARF of Swift 6 binaries; the symbol table is all callgrind needs.
  strip --strip-debug -o "$work/logshipd" "$BIN_PATH/logshipd"
  env LOGSHIPD_INGEST_STREAM="$work/ingest.sock" \
    LOGSHIPD_INGEST_DATAGRAM="$work/ingest.dgram" \
    LOGSHIPD_INGEST_CONTROL="$work/control.sock" \
    LOGSHIPD_SPOOL_PATH="$work/spool.db" \
    LOGSHIPD_UPLOAD_URL="$url" \
    "$@" \
    valgrind --tool=callgrind --demangle=no --vgdb-prefix="$work/vgdb" --callgrind-out-file="$work/callgrind.out" \
    "$work/logshipd" --config config/logshipd.yaml > "$work/daemon.log" 2>&1 &
  daemon=$!
}

# Ends the script, with the daemon's output, if the daemon has died.
running() {
  kill -0 "$daemon" 2> /dev/null && return
  echo "$SCRIPT: logshipd ended:" >&2
  cat "$work/daemon.log" >&2
  exit 1
}

# The daemon's status as `logctl status --json` prints it.
status() { "$BIN_PATH/logctl" status --socket "$work/control.sock" --json 2> /dev/null; }
# How many records the daemon has delivered.
delivered() { status | sed -n 's/^ *"delivered" *: *\([0-9]*\).*/\1/p'; }
# Whether at least $1 records were delivered; ends the script if the daemon has died.
delivered_at_least() { running; [ "$(delivered)" -ge "$1" ] 2> /dev/null; }

# Whether callgrind has finished writing the dump file $1.
dumped() { grep -q '^totals:' "$1" 2> /dev/null; }

# Asks callgrind for dump number $1, of what ran since the last, named $2, and waits until it is written.
dump() {
  running
  timeout 60 callgrind_control --vgdb-prefix="$work/vgdb" --dump="$2" "$daemon" > /dev/null 2>&1
  wait_for 60 dumped "$work/callgrind.out.$1"
}
