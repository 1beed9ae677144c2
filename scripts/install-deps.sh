#!/usr/bin/env bash
# Installs the Debian packages the build, the tests and `make run` need, when they are missing.
#   bsdutils: logger(1), which the tests drive against the ingest sockets
#   socat:    the README's example of writing a raw line to the socket
#   libsqlite3-dev: the system SQLite that GRDB (the durable spool) builds against
#   libsystemd-dev: sd_journal (the journal input) and sd_notify
#   libzstd-dev: zstd, which compresses the spool's chunks
#   systemd-journal-remote: makes the journal files the tests read (and journal-upload, the benchmark's peer)
#   openssl:  makes the certificates of the TLS tests
#   perl:     Sys::Syslog, a client the tests drive against the datagram socket
#   dpkg-dev: dpkg-shlibdeps, which works out the Debian package's Depends (make deb)
#   lintian, man-db: with --test, the checks of the Debian package and of the manual pages (man -l)
#   python3, python3-venv: with --test, a private Python (.build-python) with opentelemetry-proto from PyPI,
#             which checks that OTLP bodies parse with OpenTelemetry's own definitions (only the tests need it)
set -euo pipefail
cd "$(dirname "$0")/.."
# The version of OpenTelemetry's protobuf definitions the OTLP test checks against.
OTEL_PROTO_VERSION=1.45.2

needed=()
command -v logger >/dev/null 2>&1 || needed+=(bsdutils)
command -v socat >/dev/null 2>&1 || needed+=(socat)
[ -f /usr/include/sqlite3.h ] || needed+=(libsqlite3-dev)
[ -f /usr/include/systemd/sd-journal.h ] || needed+=(libsystemd-dev)
[ -f /usr/include/zstd.h ] || needed+=(libzstd-dev)
[ -x /lib/systemd/systemd-journal-remote ] || needed+=(systemd-journal-remote)
[ -x /usr/bin/openssl ] || needed+=(openssl)
perl -MSys::Syslog -e 1 >/dev/null 2>&1 || needed+=(perl)
# Debian's own: the tests also run it as another user (ConnectionHolder), who cannot reach a python under /root.
[ -x /usr/bin/python3 ] || needed+=(python3)
python3 -c "import venv, ensurepip" >/dev/null 2>&1 || needed+=(python3-venv)
command -v dpkg-shlibdeps >/dev/null 2>&1 || needed+=(dpkg-dev)
if [ "${1:-}" = "--test" ]; then
  command -v lintian >/dev/null 2>&1 || needed+=(lintian)
  command -v man >/dev/null 2>&1 || needed+=(man-db)
fi

python_tools() {
  [ "${1:-}" = "--test" ] || return 0
  [ -x .build-python/bin/python3 ] && .build-python/bin/python3 -c "import opentelemetry.proto" >/dev/null 2>&1 && return 0
  echo "install-deps: setting up .build-python with opentelemetry-proto $OTEL_PROTO_VERSION" >&2
  rm -rf .build-python
  python3 -m venv .build-python
  .build-python/bin/pip install --quiet "opentelemetry-proto==$OTEL_PROTO_VERSION"
}

if [ ${#needed[@]} -eq 0 ]; then
  python_tools "$@"
  exit 0
fi

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
python_tools "$@"
