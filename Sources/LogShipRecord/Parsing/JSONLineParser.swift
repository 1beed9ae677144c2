#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reads JSON object lines: `{"priority":"crash","message":"…","fields":{…}}`.
///
/// Recognised keys are `message` (or `msg`), `priority` (a class name, a syslog severity name or a number 0–7),
/// `severity`, `timestamp` (RFC 3339, or seconds since the epoch) and `fields` (an object). Every other key becomes
/// a field, and non-string values are kept as their JSON text. A line without a message is kept whole as the
/// message, so no data is lost.
enum JSONLineParser {
    /// Decodes `bytes` as a JSON object; `nil` for anything else (arrays, scalars, invalid JSON).
    static func parseObject(_ bytes: ArraySlice<UInt8>) -> [String: JSONValue]? {
        guard case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) else {
            return nil
        }
        return object
    }

    static func apply(_ object: [String: JSONValue], rawLine: ArraySlice<UInt8>, to record: inout LogRecord) {
        var severity: Severity?
        var priority: PriorityClass?

        if let value = object["severity"] {
            severity = value.text.flatMap { Severity(text: $0) }
        }
        if let text = object["priority"]?.text {
            if let named = PriorityClass(name: text) {
                priority = named
            } else if let numeric = Severity(text: text) {
                severity = severity ?? numeric
            }
        }
        let resolvedSeverity = severity ?? priority?.defaultSeverity ?? .informational
        record.severity = resolvedSeverity
        record.priority = priority ?? PriorityClass(severity: resolvedSeverity)

        if let value = object["timestamp"], let timestamp = timestamp(from: value) {
            record.timestamp = timestamp
        }

        guard let message = (object["message"] ?? object["msg"])?.text else {
            record.message = String(decoding: rawLine, as: UTF8.self)
            return
        }
        record.message = message

        // Collected, then sorted once: an object may hold thousands of keys. Entries of "fields" win over
        // top-level keys of the same name; a value with no text form (null, an array, an object) sets nothing.
        let reserved: Set<String> = ["message", "msg", "priority", "severity", "timestamp", "fields"]
        var collected: [String: String] = [:]
        for (key, value) in object where !reserved.contains(key) {
            collected[key] = value.text
        }
        if case .object(let fields)? = object["fields"] {
            for (key, value) in fields {
                collected[key] = value.text
            }
        }
        record.fields.merge(RecordFields(fromSender: collected.lazy.map { ($0.key, $0.value) }))
    }

    private static func timestamp(from value: JSONValue) -> Timestamp? {
        switch value {
        case .string(let text):
            return Timestamp(rfc3339: text)
        case .number(let seconds) where seconds.isFinite && abs(seconds) < 1e11:
            return Timestamp(microsecondsSinceEpoch: Int64((seconds * 1_000_000).rounded()))
        default:
            return nil
        }
    }
}

/// Any JSON value, decoded without knowing its shape in advance.
enum JSONValue: Codable, Hashable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([JSONValue].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let bool): try container.encode(bool)
        case .number(let number): try container.encode(number)
        case .string(let string): try container.encode(string)
        case .array(let array): try container.encode(array)
        case .object(let object): try container.encode(object)
        }
    }

    /// A string as itself, an integral number without a fraction, anything else as compact JSON text.
    var text: String? {
        switch self {
        case .string(let string):
            return string
        case .number(let number) where number.rounded() == number && abs(number) < 1e15:
            return String(Int64(number))
        case .null:
            return nil
        default:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) }
        }
    }
}
