#!/usr/bin/env bash
# Writes scripts/logshipd.order: the functions a running logshipd executes, for the release link to put together.
#
# Release builds put every function in a section of its own and link with lld's --symbol-ordering-file (RELEASE in
# the Makefile), so that the code the daemon runs sits at the start of .text instead of scattered over its 24 MiB.
# The kernel maps an executable's file pages in runs of 64 KiB around each page touched (fault-around): scattered
# code costs its whole neighbourhood in resident memory and page cache, about 6 MiB of an idle daemon.
#
# The list comes from the release logshipd under callgrind: first what starting and waiting runs, then what
# delivering adds (socket lines and a crash record, to a local `logctl receive`), so that an idle daemon maps only
# the first part. A stale list is never wrong, only less effective (the link skips names it does not find):
# regenerate it after large changes with `make order-file`.
#
# Needs BIN_PATH (the release build's bin directory) and valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${BIN_PATH:?set BIN_PATH to the bin directory of the release build}"
# Lines sent through the daemon while it is recorded: enough to run every part of delivery several times.
LINES=2000

work=$(mktemp -d /tmp/logshipd-order.XXXXXX)
receiver=""
daemon=""
cleanup() {
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null || true
  [ -n "$receiver" ] && kill "$receiver" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Waits up to $1 seconds for the command after it to succeed.
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ $SECONDS -lt "$deadline" ] || { echo "order-file: timed out waiting for: $*" >&2; exit 1; }
    sleep 0.2
  done
}

# valgrind 3.19 cannot read the DWARF of Swift 6 binaries; the symbol table is all callgrind needs.
strip --strip-debug -o "$work/logshipd" "$BIN_PATH/logshipd"

"$BIN_PATH/logctl" receive --listen 127.0.0.1:0 --quiet > /dev/null 2> "$work/receiver.log" &
receiver=$!
wait_for 10 grep -q "listening on" "$work/receiver.log"
url=$(grep -o "http://[^ ]*" "$work/receiver.log")

LOGSHIPD_INGEST_STREAM="$work/ingest.sock" \
LOGSHIPD_INGEST_DATAGRAM="$work/ingest.dgram" \
LOGSHIPD_INGEST_CONTROL="$work/control.sock" \
LOGSHIPD_SPOOL_PATH="$work/spool.db" \
LOGSHIPD_UPLOAD_URL="$url" \
  valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/callgrind.out" \
  "$work/logshipd" --config config/logshipd.yaml > "$work/daemon.log" 2>&1 &
daemon=$!

status() { "$BIN_PATH/logctl" status --socket "$work/control.sock" --json 2> /dev/null; }
delivered() { status | sed -n 's/^ *"delivered" *: *\([0-9]*\).*/\1/p'; }
# Whether at least $1 records were delivered.
delivered_at_least() { [ "$(delivered)" -ge "$1" ] 2> /dev/null; }

# Started and waiting: the first part.
wait_for 120 eval "status > /dev/null"
sleep 1
callgrind_control --dump=started "$daemon" > /dev/null
wait_for 30 eval "ls \"$work\"/callgrind.out.* > /dev/null 2>&1"

# Delivering: the second part.
for i in $(seq 1 "$LINES"); do echo "<14>order-file: line $i of $LINES"; done \
  | socat -u - "UNIX-CONNECT:$work/ingest.sock"
"$BIN_PATH/logctl" send --socket "$work/control.sock" --priority crash "order-file: a crash record" > /dev/null
wait_for 300 delivered_at_least $((LINES + 1))

kill -TERM "$daemon"
wait "$daemon" || true
daemon=""

# The functions of the logshipd image that have a cost in one callgrind dump, by name. The format names an
# image (ob=) or function (fn=) in full the first time and by its number (fn=(12)) after that; a recursion level
# is appended as 'N.
functions() {
  awk '
    function named(line, table,    id, rest) {
      id = line; sub(/^[a-z]+=\(/, "", id); sub(/\).*/, "", id)
      rest = line; sub(/^[a-z]+=\([0-9]+\) ?/, "", rest)
      if (rest != "") table[id] = rest
      return table[id]
    }
    /^ob=\(/ { image = named($0, images); next }
    /^cob=\(/ { named($0, images); next }
    /^fn=\(/ { name = named($0, fns); if (image ~ /\/logshipd$/) { sub(/'\''[0-9]+$/, "", name); print name }; next }
    /^cfn=\(/ { named($0, fns); next }
  ' "$1" | sort -u
}

started=$(ls "$work"/callgrind.out.* | head -n 1)
functions "$started" > "$work/started"
functions "$work/callgrind.out" | comm -23 - "$work/started" > "$work/delivering"
cat "$work/started" "$work/delivering" > scripts/logshipd.order
echo "order-file: scripts/logshipd.order lists $(wc -l < "$work/started") functions run to start and wait," \
  "then $(wc -l < "$work/delivering") more run to deliver"
