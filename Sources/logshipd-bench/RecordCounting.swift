#if canImport(Glibc)
import Glibc
#endif
import LogShip
import NIOCore

/// How the counting receiver finds the records of a request body in one upload format, at little more cost than
/// counting NDJSON's newlines: what it counts must not be what is measured.
enum RecordCounting: Sendable {
    /// Newlines, and a last line without one (NDJSON, and syslog-ng's bodies).
    case lines
    /// A byte string that appears once per record and nowhere else in the body (in JSON a quote inside a string
    /// is escaped, so punctuation around a quote is never part of one), found by its byte at `anchor`: one that
    /// is rare in the body, so that few candidates are compared whole.
    case marker([UInt8], anchor: Int)
    /// An OTLP `ExportLogsServiceRequest` in protobuf: its log records, found by walking the wire format.
    case otlpProtobuf

    init(_ format: UploadFormat) {
        switch format {
        case .ndjson: self = .lines
        // Each record's id is its first key.
        case .json: self = .marker(Array(#"{"id":""#.utf8), anchor: 0)
        // The `U` of `timeUnixNano`.
        case .otlp: self = .otlpProtobuf
        case .otlpJSON: self = .marker(Array(#","timeUnixNano":""#.utf8), anchor: 6)
        case .loki: self = .marker(Array(#"[""#.utf8), anchor: 0)
        // An entry ends with an empty line; the benchmark's records have no binary-safe field that could hold one.
        case .journal: self = .marker(Array("\n\n".utf8), anchor: 0)
        }
    }

    /// The records in a whole body.
    func count(_ body: ByteBuffer) -> Int {
        body.withUnsafeReadableBytes { bytes in
            switch self {
            case .lines:
                let newlines = bytes.count { $0 == UInt8(ascii: "\n") }
                return newlines + (bytes.last.map { $0 != UInt8(ascii: "\n") ? 1 : 0 } ?? 0)
            case .marker(let marker, let anchor): return Self.occurrences(of: marker, anchor: anchor, in: bytes)
            case .otlpProtobuf: return OTLPProtobufCount.logRecords(in: bytes)
            }
        }
    }

    private static func occurrences(of marker: [UInt8], anchor: Int, in bytes: UnsafeRawBufferPointer) -> Int {
        guard let base = bytes.baseAddress else { return 0 }
        var count = 0
        var offset = anchor
        while offset + marker.count - anchor <= bytes.count,
              let found = memchr(
                  base + offset, Int32(marker[anchor]), bytes.count - offset - (marker.count - anchor) + 1)
        {
            let start = base.distance(to: UnsafeRawPointer(found)) - anchor
            if memcmp(base + start, marker, marker.count) == 0 {
                count += 1
                offset = start + marker.count + anchor
            } else {
                offset = start + anchor + 1
            }
        }
        return count
    }
}

/// Counts the log records of an `ExportLogsServiceRequest` without decoding them: field 1 (`resource_logs`) holds
/// field 2 (`scope_logs`), which holds field 2 (`log_records`).
private enum OTLPProtobufCount {
    static func logRecords(in bytes: UnsafeRawBufferPointer) -> Int {
        var count = 0
        forEachField(1, in: bytes) { resourceLogs in
            forEachField(2, in: resourceLogs) { scopeLogs in
                forEachField(2, in: scopeLogs) { _ in count += 1 }
            }
        }
        return count
    }

    /// Calls `body` with the contents of every length-delimited field `number` of a message; stops at damage.
    private static func forEachField(
        _ number: UInt64, in message: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void
    ) {
        var offset = 0
        func varint() -> UInt64? {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while offset < message.count, shift < 64 {
                let byte = message[offset]
                offset += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return value }
                shift += 7
            }
            return nil
        }
        while offset < message.count, let key = varint() {
            switch key & 7 {
            case 0: guard varint() != nil else { return }
            case 1: offset += 8
            case 5: offset += 4
            case 2:
                guard let length = varint(), length <= UInt64(message.count - offset) else { return }
                if key >> 3 == number { body(UnsafeRawBufferPointer(rebasing: message[offset..<offset + Int(length)])) }
                offset += Int(length)
            default: return
            }
        }
    }
}
