#!/usr/bin/env bash
# Builds logshipd_<version>_<arch>.deb and logshipd-dbgsym_<version>_<arch>.deb with dpkg-deb, from the staging
# that `make install` lays out (scripts/install.sh with DESTDIR), the paths a Debian package uses: binaries in
# /usr/bin, units in /lib/systemd/system (Debian 12's place for them), debug information in /usr/lib/debug/.build-id
# (moved to the -dbgsym package). Run by `make deb`.
#   BIN_PATH    where the built release binaries are
#   OUTPUT_DIR  where the packages go (default .build/deb)
# Depends is worked out from the binaries by dpkg-shlibdeps; the configuration and the token file are conffiles;
# the maintainer scripts are deploy/debian/{postinst,prerm,postrm}; deploy/debian/lintian-overrides says why two of
# lintian's tags do not apply.
set -euo pipefail
: "${BIN_PATH:?BIN_PATH must name the directory of the built binaries}"
cd "$(dirname "$0")/.."
OUTPUT_DIR="${OUTPUT_DIR:-.build/deb}"

version=$(sed -n 's/.*static let current = "\(.*\)".*/\1/p' Sources/LogShipRecord/Record/LogShipVersion.swift)
arch=$(dpkg --print-architecture)
# The date of the last commit, not the clock's: the same checkout builds the same package.
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"
maintainer="${DEB_MAINTAINER:-logshipd maintainers <maintainers@users.noreply.a-seed-81a1fb36.example>}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root="$work/debian/logshipd"
debug_root="$work/debian/logshipd-dbgsym"

PREFIX=/usr SYSCONFDIR=/etc UNITDIR=/lib/systemd/system DEBUGDIR=/usr/lib/debug DESTDIR="$root" \
  BIN_PATH="$BIN_PATH" scripts/install.sh >/dev/null

# The debug information goes in a package of its own, as debhelper's dh_strip lays it out.
install -d "$debug_root/usr/lib" "$debug_root/usr/share/doc"
mv "$root/usr/lib/debug" "$debug_root/usr/lib/debug"
ln -s logshipd "$debug_root/usr/share/doc/logshipd-dbgsym"
build_ids=$(find "$debug_root/usr/lib/debug/.build-id" -name '*.debug' | sed 's|.*/\(..\)/\(.*\)\.debug$|\1\2|' | sort \
  | tr '\n' ' ')

doc="$root/usr/share/doc/logshipd"
install -d "$doc"
install -m 0644 deploy/debian/copyright "$doc/copyright"
install -D -m 0644 deploy/debian/lintian-overrides "$root/usr/share/lintian/overrides/logshipd"
changelog_date=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
printf 'logshipd (%s) unstable; urgency=medium\n\n  * Built from commit %s of logshipd.\n\n -- %s  %s\n' \
  "$version" "$commit" "$maintainer" "$changelog_date" | gzip -9n > "$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"

# Depends from the libraries the binaries link: dpkg-shlibdeps reads them and asks dpkg which package holds each.
mkdir -p "$work/debian"
printf 'Source: logshipd\n\nPackage: logshipd\nArchitecture: any\n' > "$work/debian/control"
shlibs=$(cd "$work" && dpkg-shlibdeps -O -e debian/logshipd/usr/bin/logshipd -e debian/logshipd/usr/bin/logctl \
  2>"$work/shlibdeps.log" | sed -n 's/^shlibs:Depends=//p') || { cat "$work/shlibdeps.log" >&2; exit 1; }

install -d -m 0755 "$root/DEBIAN" "$debug_root/DEBIAN"
install -m 0755 deploy/debian/postinst deploy/debian/prerm deploy/debian/postrm "$root/DEBIAN/"
printf '/etc/logshipd/logshipd.yaml\n/etc/logshipd/upload-token\n' > "$root/DEBIAN/conffiles"
for package_root in "$root" "$debug_root"; do
  (cd "$package_root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) \
    > "$package_root/DEBIAN/md5sums"
done
chmod 0644 "$root/DEBIAN/conffiles" "$root/DEBIAN/md5sums" "$debug_root/DEBIAN/md5sums"

installed_size() { du -sk --exclude=DEBIAN "$1" | cut -f1; }
# The maintainer scripts run systemd-sysusers and systemd-tmpfiles (from systemd, or the standalone ones) and
# deb-systemd-helper (init-system-helpers).
cat > "$root/DEBIAN/control" <<CONTROL
Package: logshipd
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(installed_size "$root")
Depends: $shlibs, systemd | systemd-standalone-sysusers, init-system-helpers (>= 1.50)
Section: admin
Priority: optional
Description: remote-logging daemon that sends crash reports first
 logshipd reads log lines from Unix sockets, from journald and from logctl,
 keeps them in a durable spool and sends them to an HTTP receiver (NDJSON,
 OTLP, journal export or Loki) with at most two requests in flight, crash
 reports always ahead of other records.
 .
 logctl sends records, shows the daemon's status and runs a small receiver
 for trying it out.
CONTROL
cat > "$debug_root/DEBIAN/control" <<CONTROL
Package: logshipd-dbgsym
Source: logshipd
Version: $version
Auto-Built-Package: debug-symbols
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(installed_size "$debug_root")
Depends: logshipd (= $version)
Section: debug
Priority: optional
Description: debug symbols for logshipd
Build-Ids: ${build_ids% }
CONTROL

mkdir -p "$OUTPUT_DIR"
for package in logshipd logshipd-dbgsym; do
  deb="$OUTPUT_DIR/${package}_${version}_${arch}.deb"
  dpkg-deb --root-owner-group -Zxz --build "$work/debian/$package" "$deb" >/dev/null
  echo "built $deb ($(du -h "$deb" | cut -f1))"
done
