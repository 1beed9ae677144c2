import CompressNIO
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore

/// Reads a request body in whichever format logshipd (or `systemd-journal-upload`) sent it: NDJSON, a JSON array,
/// OTLP/HTTP in protobuf or JSON, a Loki push or journal export format, gzip- or zstd-compressed or not.
struct RequestBodyDecoder {
    /// What a body held.
    struct Decoded {
        var records: [LogRecord] = []
        /// The id logshipd gave each record (``records``' order), `nil` for a record sent without one.
        var ids: [String?] = []
        /// Records the body carried: decoded, or counted when not decoding.
        var count = 0
        /// Lines, entries or elements that did not decode as records.
        var malformed = 0
    }

    /// The formats a body can be in, named as `upload.format` names them.
    enum Format: String, Sendable {
        case ndjson
        case json
        /// OTLP/HTTP in protobuf.
        case otlp
        /// OTLP/HTTP in JSON.
        case otlpJSON = "otlp-json"
        case loki
        case journal

        /// The format of a request to `path` with `contentType`: the journal's and protobuf's content types, then
        /// the OTLP and Loki paths, then the shape of a JSON body (an array, or an object with `resourceLogs` or
        /// `streams`).
        init(path: String, contentType: String?, body: ByteBuffer) {
            let path = path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path
            if contentType?.hasPrefix("application/vnd.fdo.journal") == true {
                self = .journal
            } else if contentType?.hasPrefix("application/x-protobuf") == true {
                self = .otlp
            } else if path.hasSuffix("/loki/api/v1/push") {
                self = .loki
            } else if path.hasSuffix("/v1/logs") {
                self = .otlpJSON
            } else if contentType?.hasPrefix("application/json") == true {
                let start = body.readableBytesView.first { ![0x20, 0x09, 0x0a, 0x0d].contains($0) }
                if start == UInt8(ascii: "[") {
                    self = .json
                } else if body.readableBytesView.firstRange(of: Array(#""resourceLogs""#.utf8)) != nil {
                    self = .otlpJSON
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
        guard let encoding = contentEncoding?.trimmingSpaces().lowercased(), encoding != "identity"
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
                ids: decodesRecords ? export.entries.map(JournalExportDecoder.recordID(from:)) : [],
                count: export.entries.count, malformed: export.malformed)
        case .ndjson where !decodesRecords:
            // Lines, the last one with or without its newline (syslog-ng's http() puts newlines only between).
            let newlines = bytes.count { $0 == UInt8(ascii: "\n") }
            return Decoded(count: newlines + (bytes.last.map { $0 != UInt8(ascii: "\n") } ?? false ? 1 : 0))
        case .ndjson:
            return Self.records(fromLines: bytes.split(separator: UInt8(ascii: "\n")).map { Data($0) })
        case .json:
            guard let elements = try? JSONDecoder().decode([Failable<IdentifiedRecord>].self, from: Data(bytes)) else {
                return Decoded(malformed: 1)
            }
            let records = elements.compactMap(\.value)
            return Decoded(
                records: records.map(\.record), ids: records.map(\.id), count: records.count,
                malformed: elements.count - records.count)
        case .loki:
            guard let push = try? JSONDecoder().decode(LokiPush.self, from: Data(bytes)) else {
                return Decoded(malformed: 1)
            }
            // The line is the record as logshipd spools it, without its id: the id is the entry's metadata.
            let entries = push.streams.flatMap(\.values)
            return Self.records(fromLines: entries.map { Data($0.line.utf8) }, ids: entries.map(\.id))
        case .otlp:
            guard let request = try? OTLPLogsRequest(protobuf: Array(bytes)[...]) else { return Decoded(malformed: 1) }
            let identified = request.records()
            return Decoded(records: identified.map(\.record), ids: identified.map(\.id), count: identified.count)
        case .otlpJSON:
            guard let request = try? JSONDecoder().decode(OTLPLogsRequest.self, from: Data(bytes)) else {
                return Decoded(malformed: 1)
            }
            let identified = request.records()
            return Decoded(records: identified.map(\.record), ids: identified.map(\.id), count: identified.count)
        }
    }

    /// The records of `lines`, each with the id its line carries, or the one `ids` gives for it where the format
    /// keeps the id beside the line.
    private static func records(fromLines lines: [Data], ids: [String?]? = nil) -> Decoded {
        let decoder = JSONDecoder()
        var decoded = Decoded()
        for (index, line) in lines.enumerated() {
            if let identified = try? decoder.decode(IdentifiedRecord.self, from: line) {
                decoded.records.append(identified.record)
                decoded.ids.append(ids?[index] ?? identified.id)
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

/// A record in logshipd's NDJSON form with the `id` it was sent with, if any.
private struct IdentifiedRecord: Decodable {
    private enum CodingKeys: String, CodingKey {
        case id
    }

    var record: LogRecord
    var id: String?

    init(from decoder: any Decoder) throws {
        record = try LogRecord(from: decoder)
        id = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(String.self, forKey: .id)
    }
}

/// A Loki push request: streams of `[nanoseconds, line]` entries, each with structured metadata after its line
/// (`log_record_uid`, the record's id) when logshipd sent it.
private struct LokiPush: Decodable {
    struct Stream: Decodable {
        var stream: [String: String]
        var values: [Entry]
    }

    struct Entry: Decodable {
        var line: String
        var id: String?

        init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            _ = try container.decode(String.self)
            line = try container.decode(String.self)
            id = container.isAtEnd ? nil : try container.decode([String: String].self)["log_record_uid"]
        }
    }

    var streams: [Stream]
}
