#!/usr/bin/env bash
# Installs logshipd: release binaries, systemd units, sysusers.d and tmpfiles.d entries, and the packaged
# configuration (never over an existing one). Run by `make install`.
#   PREFIX      where binaries and units go (default /usr/local): $PREFIX/bin, $PREFIX/lib/systemd/system,
#               $PREFIX/lib/sysusers.d, $PREFIX/lib/tmpfiles.d (systemd looks in all of them)
#   SYSCONFDIR  where the configuration goes (default /etc): $SYSCONFDIR/logshipd
#   DESTDIR     a staging root prepended to every path (packaging); the units still name the final paths
#   BIN_PATH    where the built binaries are
set -euo pipefail

PREFIX="${PREFIX:-/usr/local}"
SYSCONFDIR="${SYSCONFDIR:-/etc}"
DESTDIR="${DESTDIR:-}"
: "${BIN_PATH:?BIN_PATH must name the directory of the built binaries}"
cd "$(dirname "$0")/.."

bindir="$PREFIX/bin"
unitdir="$PREFIX/lib/systemd/system"
configdir="$SYSCONFDIR/logshipd"

install -d "$DESTDIR$bindir" "$DESTDIR$unitdir" "$DESTDIR$PREFIX/lib/sysusers.d" "$DESTDIR$PREFIX/lib/tmpfiles.d" \
  "$DESTDIR$configdir"
install -m 0755 "$BIN_PATH/logshipd" "$BIN_PATH/logctl" "$DESTDIR$bindir/"
# The units name the installed binary and configuration.
sed -e "s|/usr/local/bin/logshipd|$bindir/logshipd|" -e "s|/etc/logshipd/|$configdir/|g" \
  deploy/logshipd.service > "$DESTDIR$unitdir/logshipd.service"
chmod 0644 "$DESTDIR$unitdir/logshipd.service"
install -m 0644 deploy/logshipd.socket "$DESTDIR$unitdir/"
install -m 0644 deploy/sysusers.d/logshipd.conf "$DESTDIR$PREFIX/lib/sysusers.d/logshipd.conf"
install -m 0644 deploy/tmpfiles.d/logshipd.conf "$DESTDIR$PREFIX/lib/tmpfiles.d/logshipd.conf"
if [ ! -e "$DESTDIR$configdir/logshipd.yaml" ]; then
  install -m 0644 deploy/logshipd.yaml "$DESTDIR$configdir/logshipd.yaml"
fi
# LoadCredential= needs the token file to exist; it stays empty (no Authorization header) until filled.
if [ ! -e "$DESTDIR$configdir/upload-token" ]; then
  install -m 0600 /dev/null "$DESTDIR$configdir/upload-token"
fi

echo "installed logshipd in $DESTDIR$PREFIX; configuration in $DESTDIR$configdir/logshipd.yaml. To enable it:"
echo "  systemd-sysusers && systemd-tmpfiles --create && systemctl daemon-reload"
echo "  systemctl enable --now logshipd.socket logshipd.service"
