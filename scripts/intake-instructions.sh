#!/usr/bin/env bash
# Prints the instructions the release logshipd spends per line turning socket lines into spool records
# (RecordParser.encode, everything it calls included), counted by callgrind: unlike a time, the count barely moves
# on a loaded machine (runs of one binary differ by a few tenths of a percent), so a change to the parsers or the
# NDJSON writer can be measured run against run.
#
# 100 000 RFC 3164 lines of an access log go through the stream socket to a local `logctl receive`.
# Needs BIN_PATH (the release build's bin directory), valgrind, socat and binutils' strip.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${BIN_PATH:?set BIN_PATH to the bin directory of the release build}"
LINES=100000

work=$(mktemp -d "/tmp/logshipd-intake-instructions.XXXXXX")
receiver=""
daemon=""
cleanup() {
  # Killed: nothing after the dump counts.
  [ -n "$daemon" ] && { kill -KILL "$daemon"; wait "$daemon"; } 2> /dev/null || true
  [ -n "$receiver" ] && kill "$receiver" 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Waits up to $1 seconds for the command after it to succeed.
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ $SECONDS -lt "$deadline" ] || { echo "intake-instructions: timed out waiting for: $*" >&2; exit 1; }
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
# `url`; its dumps are $work/callgrind.out.N, its output $work/daemon.log.
start_daemon() {
  # valgrind 3.19 cannot read the DWARF of Swift 6 binaries; the symbol table is all callgrind needs.
  strip --strip-debug -o "$work/logshipd" "$BIN_PATH/logshipd"
  env LOGSHIPD_INGEST_STREAM="$work/ingest.sock" \
    LOGSHIPD_INGEST_DATAGRAM="$work/ingest.dgram" \
    LOGSHIPD_INGEST_CONTROL="$work/control.sock" \
    LOGSHIPD_SPOOL_PATH="$work/spool.db" \
    LOGSHIPD_UPLOAD_URL="$url" \
    valgrind --tool=callgrind --demangle=no --vgdb-prefix="$work/vgdb" --callgrind-out-file="$work/callgrind.out" \
    "$work/logshipd" --config config/logshipd.yaml > "$work/daemon.log" 2>&1 &
  daemon=$!
}

# Ends the script, with the daemon's output, if the daemon has died.
running() {
  kill -0 "$daemon" 2> /dev/null && return
  echo "intake-instructions: logshipd ended:" >&2
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

for i in $(seq 0 $((LINES - 1))); do
  echo "<14>Nov 22 10:00:00 web-17 nginx[4242]: GET /api/v1/orders/$i 200 12ms user=u$((i % 500)) agent=curl/8.5.0"
done > "$work/lines"

start_receiver
start_daemon
wait_for 120 test -S "$work/ingest.sock"
socat -u "$work/lines" "UNIX-CONNECT:$work/ingest.sock"
wait_for 600 delivered_at_least "$LINES"
dump 1 delivered

# callgrind leaves Swift's names mangled: RecordParser.encode(_:source:peer:receivedAt:) is the first match.
callgrind_annotate --inclusive=yes "$work/callgrind.out.1" 2> /dev/null \
  | awk -v lines="$LINES" '/ParserV6encode_6source4peer10receivedAt/ {
      if (found++) next
      gsub(",", "", $1)
      printf "%d instructions per line in RecordParser.encode (%d lines)\n", $1 / lines, lines
    }
    END {
      if (found) exit
      print "intake-instructions: RecordParser.encode is not in the profile" > "/dev/stderr"
      exit 1
    }'
