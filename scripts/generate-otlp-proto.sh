#!/usr/bin/env bash
# Regenerates the Swift types of OpenTelemetry's OTLP logs messages (Tests/OTLPProto/Generated), which the tests use
# to parse the protobuf bodies of `upload.format: otlp`.
#
# The definitions are OpenTelemetry's own, as the opentelemetry-proto Python package (the version
# scripts/install-deps.sh pins) carries them: compiled into its *_pb2 modules, from which they are read back as a
# FileDescriptorSet, the form protoc takes in place of .proto files. protoc comes from Debian's protobuf-compiler;
# protoc-gen-swift is built from swift-protobuf, the version Package.swift names.
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT_PROTOBUF_VERSION=1.39.0
PLUGIN_DIR=.build-protoc-gen-swift
OUT=Tests/OTLPProto/Generated

scripts/install-deps.sh --test
command -v protoc >/dev/null 2>&1 || {
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get install -y --no-install-recommends protobuf-compiler >/dev/null
}

if [ ! -x "$PLUGIN_DIR/.build/release/protoc-gen-swift" ]; then
  rm -rf "$PLUGIN_DIR"
  git clone --quiet --depth 1 --branch "$SWIFT_PROTOBUF_VERSION" https://github.com/apple/swift-protobuf.git "$PLUGIN_DIR"
  swift build --package-path "$PLUGIN_DIR" -c release --product protoc-gen-swift
fi

descriptors=$(mktemp)
trap 'rm -f "$descriptors"' EXIT
.build-python/bin/python3 - "$descriptors" <<'PYTHON'
import sys
from google.protobuf import descriptor_pb2
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2

files, seen = descriptor_pb2.FileDescriptorSet(), set()
def add(file):
    if file.name in seen:
        return
    seen.add(file.name)
    for dependency in file.dependencies:
        add(dependency)
    file.CopyToProto(files.file.add())
add(logs_service_pb2.DESCRIPTOR)
open(sys.argv[1], "wb").write(files.SerializeToString())
PYTHON

rm -rf "$OUT"
mkdir -p "$OUT"
protoc --descriptor_set_in="$descriptors" --plugin=protoc-gen-swift="$PLUGIN_DIR/.build/release/protoc-gen-swift" \
  --swift_out="$OUT" --swift_opt=Visibility=Public,FileNaming=PathToUnderscores \
  opentelemetry/proto/common/v1/common.proto opentelemetry/proto/resource/v1/resource.proto \
  opentelemetry/proto/logs/v1/logs.proto opentelemetry/proto/collector/logs/v1/logs_service.proto
echo "generated: $(ls "$OUT")"
