#!/usr/bin/env bash
# Installs the Debian packages the build, the tests and `make run` need, when they are missing.
#   bsdutils: logger(1), which the tests drive against the ingest sockets
#   socat:    the README's example of writing a raw line to the socket
#   libsqlite3-dev: the system SQLite that GRDB (the durable spool) builds against
#   libsystemd-dev: sd_journal (the journal input) and sd_notify
#   systemd-journal-remote: makes the journal files the tests read (and journal-upload, the benchmark's peer)
set -euo pipefail

needed=()
command -v logger >/dev/null 2>&1 || needed+=(bsdutils)
command -v socat >/dev/null 2>&1 || needed+=(socat)
[ -f /usr/include/sqlite3.h ] || needed+=(libsqlite3-dev)
[ -f /usr/include/systemd/sd-journal.h ] || needed+=(libsystemd-dev)
[ -x /lib/systemd/systemd-journal-remote ] || needed+=(systemd-journal-remote)
[ ${#needed[@]} -eq 0 ] && exit 0

if ! command -v swift >/dev/null 2>&1; then
  echo "install-deps: swift is not on PATH; install the Swift 6.3 toolchain first" >&2
  exit 1
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${needed[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get install -y --no-install-recommends "${needed[@]}" >/dev/null \
  || { $sudo apt-get update >/dev/null && $sudo apt-get install -y --no-install-recommends "${needed[@]}" >/dev/null; }
