import CompressNIO
import Foundation
import NIOCore

/// Reads a request body in whichever format logshipd (or `systemd-journal-upload`) sent it: NDJSON, a JSON array,
/// OTLP/HTTP JSON, a Loki push or journal export format, gzip- or zstd-compressed or not.
struct RequestBodyDecoder {
    /// What a body held.
    struct Decoded {
        var records: [LogRecord] = []
        /// Records the body carried: decoded, or counted when not decoding.
        var count = 0
        /// Lines, entries or elements that did not decode as records.
        var malformed = 0
    }

    /// The formats a body can be in.
    enum Format: String, Sendable {
        case ndjson
        case json
        case otlp
        case loki
        case journal

        /// The format of a request to `path` with `contentType`: the journal's content type, then the OTLP and
        /// Loki paths, then the shape of a JSON body (an array, or an object with `resourceLogs` or `streams`).
        init(path: String, contentType: String?, body: ByteBuffer) {
            let path = path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path
            if contentType?.hasPrefix("application/vnd.fdo.journal") == true {
                self = .journal
            } else if path.hasSuffix("/loki/api/v1/push") {
                self = .loki
            } else if path.hasSuffix("/v1/logs") {
                self = .otlp
            } else if contentType?.hasPrefix("application/json") == true {
                let start = body.readableBytesView.first { ![0x20, 0x09, 0x0a, 0x0d].contains($0) }
                if start == UInt8(ascii: "[") {
                    self = .json
                } else if body.readableBytesView.firstRange(of: Array(#""resourceLogs""#.utf8)) != nil {
                    self = .otlp
                } else if body.readableBytesView.firstRange(of: Array(#""streams""#.utf8)) != nil {
                    self = .loki
                } else {
                    self = .ndjson
                }
            } else {
                self = .ndjson
            }
        }
    }

    /// Why a body could not be read at all.
    enum Failure: Error, CustomStringConvertible {
        case compression(String)
        case unsupportedEncoding(String)
        case tooLarge(Int)

        var description: String {
            switch self {
            case .compression(let reason): "the body does not decompress: \(reason)"
            case .unsupportedEncoding(let encoding): "Content-Encoding \(encoding) is not supported (gzip and zstd are)"
            case .tooLarge(let limit): "the body decompresses to more than \(limit) bytes"
            }
        }
    }

    /// The most bytes a body may decompress to.
    var maximumBytes: Int
    /// Whether to decode records, or only count them where the format allows (NDJSON lines, export entries).
    var decodesRecords = true

    /// The body without its `Content-Encoding`.
    func decompressed(_ body: ByteBuffer, contentEncoding: String?) throws -> ByteBuffer {
        guard let encoding = contentEncoding?.trimmingCharacters(in: .whitespaces).lowercased(), encoding != "identity"
        else { return body }
        if encoding == "zstd" {
            do {
                return try ZstdBody.decompress(body, maximumBytes: maximumBytes)
            } catch .tooLarge {
                throw Failure.tooLarge(maximumBytes)
            } catch .damaged(let reason) {
                throw Failure.compression("zstd: \(reason)")
            }
        }
        guard encoding == "gzip" || encoding == "x-gzip" else { throw Failure.unsupportedEncoding(encoding) }
        var compressed = body
        do {
            return try compressed.decompress(with: .gzip(), maxSize: maximumBytes)
        } catch let error as CompressNIOError where error == .bufferOverflow {
            throw Failure.tooLarge(maximumBytes)
        } catch {
            throw Failure.compression("\(error)")
        }
    }

    /// The records in `body`, an uncompressed body in `format`.
    func decode(_ body: ByteBuffer, as format: Format) -> Decoded {
        let bytes = body.readableBytesView
        switch format {
        case .journal:
            let export = JournalExportDecoder.entries(in: bytes)
            return Decoded(
                records: decodesRecords ? export.entries.map(JournalExportDecoder.record(from:)) : [],
                count: export.entries.count, malformed: export.malformed)
        case .ndjson where !decodesRecords:
            // Lines, the last one with or without its newline (syslog-ng's http() puts newlines only between).
            let newlines = bytes.count { $0 == UInt8(ascii: "\n") }
            return Decoded(count: newlines + (bytes.last.map { $0 != UInt8(ascii: "\n") } ?? false ? 1 : 0))
        case .ndjson:
            return Self.records(fromLines: bytes.split(separator: UInt8(ascii: "\n")).map { Data($0) })
        case .json:
            guard let elements = try? JSONDecoder().decode([Failable<LogRecord>].self, from: Data(bytes)) else {
                return Decoded(malformed: 1)
            }
            let records = elements.compactMap(\.value)
            return Decoded(records: records, count: records.count, malformed: elements.count - records.count)
        case .loki:
            guard let push = try? JSONDecoder().decode(LokiPush.self, from: Data(bytes)) else { return Decoded(malformed: 1) }
            let lines = push.streams.flatMap(\.values).map { Data(($0.count == 2 ? $0[1] : "").utf8) }
            return Self.records(fromLines: lines)
        case .otlp:
            guard let request = try? JSONDecoder().decode(OTLPLogsRequest.self, from: Data(bytes)) else {
                return Decoded(malformed: 1)
            }
            let records = request.records()
            return Decoded(records: records, count: records.count)
        }
    }

    private static func records(fromLines lines: [Data]) -> Decoded {
        let decoder = JSONDecoder()
        var decoded = Decoded()
        for line in lines {
            if let record = try? decoder.decode(LogRecord.self, from: line) {
                decoded.records.append(record)
            } else {
                decoded.malformed += 1
            }
        }
        decoded.count = decoded.records.count
        return decoded
    }
}

/// An element that may not decode, so that one bad element does not hide the others.
private struct Failable<Value: Decodable>: Decodable {
    var value: Value?

    init(from decoder: any Decoder) throws {
        value = try? Value(from: decoder)
    }
}

/// A Loki push request: streams of `[nanoseconds, line]` pairs.
private struct LokiPush: Decodable {
    struct Stream: Decodable {
        var stream: [String: String]
        var values: [[String]]
    }

    var streams: [Stream]
}

/// An OTLP/HTTP JSON `ExportLogsServiceRequest`, as far as it maps back to records.
private struct OTLPLogsRequest: Decodable {
    struct ResourceLogs: Decodable {
        struct Resource: Decodable {
            var attributes: [KeyValue]?
        }

        struct ScopeLogs: Decodable {
            var logRecords: [Record]?
        }

        var resource: Resource?
        var scopeLogs: [ScopeLogs]?
    }

    struct Record: Decodable {
        var timeUnixNano: String?
        var severityNumber: Int?
        var body: AnyValue?
        var attributes: [KeyValue]?
    }

    struct KeyValue: Decodable {
        var key: String
        var value: AnyValue
    }

    struct AnyValue: Decodable {
        var stringValue: String?
        var intValue: String?
        var boolValue: Bool?

        var text: String? { stringValue ?? intValue ?? boolValue.map { String($0) } }
    }

    var resourceLogs: [ResourceLogs]

    func records() -> [LogRecord] {
        resourceLogs.flatMap { resourceLogs in
            let resource = Self.dictionary(resourceLogs.resource?.attributes)
            return (resourceLogs.scopeLogs ?? []).flatMap { $0.logRecords ?? [] }.map { record in
                Self.record(record, host: resource["host.name"] ?? "")
            }
        }
    }

    private static func record(_ record: Record, host: String) -> LogRecord {
        let attributes = dictionary(record.attributes)
        let severity = attributes["syslog.severity"].flatMap { Int($0) }.flatMap(Severity.init(rawValue:))
            ?? severity(fromOTLP: record.severityNumber ?? 9)
        let priority = attributes["logship.priority"].flatMap(PriorityClass.init(name:)) ?? PriorityClass(severity: severity)
        let microseconds = record.timeUnixNano.flatMap { Int64($0) }.map { $0 / 1000 } ?? 0
        var peer: PeerCredentials?
        if let pid = attributes["process.pid"].flatMap({ Int32($0) }) {
            peer = PeerCredentials(
                pid: pid, uid: attributes["user.id"].flatMap { UInt32($0) } ?? 0,
                gid: attributes["group.id"].flatMap { UInt32($0) } ?? 0, comm: attributes["process.executable.name"])
        }
        // Identity only from the names logshipd sets; a sender's field renamed away from them is a field again,
        // under the key it was sent with.
        var fields = RecordFields(
            attributes.lazy.filter { !OTLPAttributeNames.record.contains($0.key) }
                .map { (OTLPAttributeNames.field(forAttribute: $0.key), $0.value) })
        if let unit = attributes["systemd.unit"] { fields["systemd_unit"] = unit }
        return LogRecord(
            timestamp: Timestamp(microsecondsSinceEpoch: microseconds), priority: priority, severity: severity,
            host: host, source: attributes["logship.source"].flatMap(LogRecord.Source.init(rawValue:)) ?? .socket,
            message: record.body?.text ?? "", peer: peer, fields: fields,
            truncated: attributes["logship.truncated"] == "true")
    }

    private static func dictionary(_ attributes: [KeyValue]?) -> [String: String] {
        Dictionary((attributes ?? []).compactMap { attribute in attribute.value.text.map { (attribute.key, $0) } }) { $1 }
    }

    /// The syslog severity nearest to an OpenTelemetry severity number.
    private static func severity(fromOTLP number: Int) -> Severity {
        switch number {
        case 21...: .emergency
        case 17...20: .error
        case 13...16: .warning
        case 10...12: .notice
        case 9: .informational
        default: .debug
        }
    }
}
