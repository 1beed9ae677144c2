import Foundation
import NIOCore
import Testing

@testable import LogShip
@testable import LogShipClient
@testable import LogShipRecord

/// Issue 40, point 1: every format carries each record's id, where a receiver of that format looks for it.
@Suite("Record ids in every format")
struct RecordIDEncodingTests {
    static let ids = RecordIDs(instance: RecordIDs.testInstance, priority: .error, sequences: [41, 42, 1_000_000])

    @Test("each format's body gives back every record's id, in order", arguments: UploadFormat.allCases)
    func roundTrip(format: UploadFormat) throws {
        let lines = (UploadFormatTests.records + [UploadFormatTests.records[0]]).map { $0.ndjsonLine[...] }
        let body = try format.encoder.encode(lines, ids: Self.ids)
        let decoder = RequestBodyDecoder(maximumBytes: 1 << 20)
        let buffer = ByteBuffer(bytes: body)
        let decoded = decoder.decode(
            buffer,
            as: RequestBodyDecoder.Format(
                path: format.encoder.defaultPath, contentType: format.encoder.contentType, body: buffer))
        #expect(decoded.malformed == 0 && decoded.records.count == 3)
        let expected = (0..<3).map { Self.ids[$0] }
        // Loki and OTLP group records by stream or resource: the order may change, not the ids.
        if format == .loki || format.isOTLP {
            #expect(Set(decoded.ids.compactMap { $0 }) == Set(expected) && decoded.ids.count == 3)
        } else {
            #expect(decoded.ids == expected)
        }
        #expect(decoded.records.allSatisfy { $0.fields["id"] == nil && $0.fields["log.record.uid"] == nil },
                "the id is not taken for a field of the record")
    }

    @Test("NDJSON and JSON: `id` is each object's first key; the rest of the line is the spool's, byte for byte")
    func firstKey() throws {
        let line = UploadFormatTests.records[1].ndjsonLine
        let body = String(
            decoding: try UploadFormat.ndjson.encoder.encode([line[...]], ids: Self.ids.prefix(1)), as: UTF8.self)
        #expect(body == #"{"id":"\#(Self.ids[0])","# + String(decoding: line.dropFirst(), as: UTF8.self) + "\n")
        let array = String(
            decoding: try UploadFormat.json.encoder.encode([line[...]], ids: Self.ids.prefix(1)), as: UTF8.self)
        #expect(array == "[" + body.dropLast() + "]")
    }

    @Test("journal export: LOGSHIP_RECORD_ID; Loki: the entry's structured metadata log_record_uid")
    func namedFields() throws {
        let line = UploadFormatTests.records[1].ndjsonLine[...]
        let journal = String(
            decoding: try UploadFormat.journal.encoder.encode([line], ids: Self.ids.prefix(1)), as: UTF8.self)
        #expect(journal.contains("\nLOGSHIP_RECORD_ID=\(Self.ids[0])\n"))
        let loki = String(
            decoding: try UploadFormat.loki.encoder.encode([line], ids: Self.ids.prefix(1)), as: UTF8.self)
        #expect(loki.contains(#",{"log_record_uid":"\#(Self.ids[0])"}]"#))
    }
}

extension RecordIDs {
    /// The first `count` ids.
    fileprivate func prefix(_ count: Int) -> RecordIDs {
        RecordIDs(instance: instance, priority: priority, sequences: Array(sequences.prefix(count)))
    }
}

extension UploadFormat {
    fileprivate var isOTLP: Bool { self == .otlp || self == .otlpJSON }
}
