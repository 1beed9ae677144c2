#!/usr/bin/env bash
# Writes scripts/logshipd.order: the functions a running logshipd executes, for the release link to put together.
#
# Release builds put every Swift function in a section of its own and link with lld's --symbol-ordering-file
# (RELEASE in the Makefile), so that the code the daemon runs sits at the start of .text instead of scattered over
# its 24 MiB.
# The kernel maps an executable's file pages in runs of 64 KiB around each page touched (fault-around): scattered
# code costs its whole neighbourhood in resident memory and page cache, about 6 MiB of an idle daemon.
#
# The list comes from the release logshipd under callgrind, run as the packaged service runs (journal input on,
# systemd notifications with a watchdog), in two parts: first everything that runs while it delivers (socket lines
# and a crash record, to a local `logctl receive`; the periodic work of waiting is part of it), then what only
# starting ran. The daemon gives back the pages of what only starting ran (ProgramPages), so what stays resident
# while it delivers is the first part, packed together, instead of hot functions spread among cold ones 64 KiB apart.
# What only stopping runs is left with the rest: callgrind 3.19 crashes when the daemon stops under it (an internal
# SIGSEGV: a permission fault at an address in `.rodata`, which ProgramPages makes read-only), so the daemon is
# killed once the second dump is written. A stale list is never wrong, only less effective (the link skips names it
# does not find): regenerate it after large changes with `make order-file`.
#
# Needs BIN_PATH (the release build's bin directory) and valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${BIN_PATH:?set BIN_PATH to the bin directory of the release build}"
SCRIPT=order-file
source scripts/lib/callgrind-daemon.sh
# Lines sent through the daemon while it is recorded: enough to run every part of delivery several times.
LINES=2000

start_receiver

# What systemd gives the packaged service, so that its idle work is recorded too: a notification socket with a
# watchdog (every second here), and the journal input on.
socat -u UNIX-RECV:"$work/notify.sock" - > "$work/notifications" &
helpers+=($!)
wait_for 10 test -S "$work/notify.sock"
start_daemon NOTIFY_SOCKET="$work/notify.sock" WATCHDOG_USEC=2000000 LOGSHIPD_JOURNAL_ENABLED=true

# Whether the daemon answers and has sent `$1` to systemd since start; ends the script if it has died.
notified() { running; status > /dev/null && grep -q "$1" "$work/notifications"; }

# Started and waiting, once a watchdog ping shows the periodic work has run: what starting ran.
wait_for 120 notified WATCHDOG=1
dump 1 started

# Delivering: what runs while the daemon works.
for i in $(seq 1 "$LINES"); do echo "<14>order-file: line $i of $LINES"; done \
  | socat -u - "UNIX-CONNECT:$work/ingest.sock"
"$BIN_PATH/logctl" send --socket "$work/control.sock" --priority crash "order-file: a crash record" > /dev/null
wait_for 300 delivered_at_least $((LINES + 1))
dump 2 delivered

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
  ' "$1" | grep -v '^0x\|^(below main)$' | sort -u
}

functions "$work/callgrind.out.2" > "$work/delivering"
functions "$work/callgrind.out.1" | comm -23 - "$work/delivering" > "$work/starting"
cat "$work/delivering" "$work/starting" > scripts/logshipd.order
echo "order-file: scripts/logshipd.order lists $(wc -l < "$work/delivering") functions run while delivering," \
  "then $(wc -l < "$work/starting") run only to start"
