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
SCRIPT=intake-instructions
source scripts/lib/callgrind-daemon.sh
LINES=100000

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
