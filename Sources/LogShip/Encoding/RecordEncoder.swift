import NIOCore

/// Turns a batch of records, in the spool's canonical form (one NDJSON line each), into a request body for one
/// kind of receiver. The spool never stores another form, so records spooled before the format changed go out
/// in the new one.
public protocol RecordEncoder: Sendable {
    /// The request's `Content-Type`.
    var contentType: String { get }
    /// The path requests go to when `upload.url` names none.
    var defaultPath: String { get }
    /// The body for `lines`, canonical NDJSON lines without their newlines, each record with its id from `ids`
    /// (in the order of `lines`).
    func encode(_ lines: [ArraySlice<UInt8>], ids: RecordIDs) throws -> [UInt8]
    /// The body for `lines`, in the buffer the request is written from.
    func encodeBuffer(_ lines: [ArraySlice<UInt8>], ids: RecordIDs) throws -> ByteBuffer
}

extension RecordEncoder {
    public func encode(_ lines: [ArraySlice<UInt8>], ids: RecordIDs) throws -> [UInt8] {
        Array(try encodeBuffer(lines, ids: ids).readableBytesView)
    }
}

/// The formats `upload.format` names.
public enum UploadFormat: String, CaseIterable, Sendable {
    case ndjson
    case json
    /// OTLP/HTTP in protobuf, OTLP/HTTP's default encoding.
    case otlp
    /// OTLP/HTTP in JSON.
    case otlpJSON = "otlp-json"
    case journal
    case loki

    /// The encoder for this format.
    public var encoder: any RecordEncoder {
        switch self {
        case .ndjson: NDJSONEncoder()
        case .json: JSONArrayEncoder()
        case .otlp: OTLPProtobufEncoder()
        case .otlpJSON: OTLPJSONEncoder()
        case .journal: JournalExportEncoder()
        case .loki: LokiEncoder()
        }
    }
}

extension Timestamp {
    /// Nanoseconds since 1970 as OTLP and Loki carry them: unsigned 64-bit, so an instant before 1970 is 0 and one
    /// after 2554 the largest value (a record's time may be any year from 0000 to 9999).
    var unixNanoseconds: UInt64 {
        let (nanoseconds, overflow) = UInt64(clamping: max(0, microsecondsSinceEpoch))
            .multipliedReportingOverflow(by: 1000)
        return overflow ? .max : nanoseconds
    }
}
