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
/// message, so no data is lost. A record takes at most ``maximumFields`` fields; the members beyond them stay in
/// its message as they were written.
enum JSONLineParser {
    /// The most fields a JSON line gives its record, counting the top-level keys that become fields and the
    /// entries of `fields`, in the order they were written.
    static let maximumFields = 1_000

    /// A JSON object line, decoded as far as a record takes it.
    struct Object {
        var members: [String: JSONValue]
        /// The members beyond ``maximumFields``, undecoded, as the text of an object of their own; and how many.
        var overflow: (text: [UInt8], count: Int)?
    }

    /// The keys that do not become fields.
    private static let reservedKeys: Set<String> = ["message", "msg", "priority", "severity", "timestamp", "fields"]
    /// The same, as they are written in a line, quotes included: what the count compares keys with.
    private static let reservedKeyTexts = Set(reservedKeys.map { Array("\"\($0)\"".utf8)[...] })
    private static let fieldsKeyText = Array(#""fields""#.utf8)[...]

    /// Decodes `bytes` as a JSON object; `nil` for anything else (arrays, scalars, invalid JSON).
    static func parseObject(_ bytes: ArraySlice<UInt8>) -> Object? {
        // A member takes 4 bytes at least (`"":0`): a shorter line cannot hold more than the bound, and is not
        // scanned for its members before it is decoded.
        guard bytes.count > 4 * maximumFields else { return decode(bytes).map { Object(members: $0) } }
        let members = JSONObjectMembers(bytes)
        guard fieldCount(members) > maximumFields else {
            return decode(bytes).map { Object(members: $0) }
        }
        return cut(members)
    }

    private static func decode(_ bytes: ArraySlice<UInt8>) -> [String: JSONValue]? {
        guard case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) else {
            return nil
        }
        return object
    }

    /// How many fields the object's members make, counted up to one beyond ``maximumFields``; 0 when the scan
    /// finds no object (the decoder then decides).
    private static func fieldCount(_ members: JSONObjectMembers) -> Int {
        var count = 0
        let isObject = members.forEach { member in
            if member.key == fieldsKeyText, member.value.first == UInt8(ascii: "{") {
                _ = JSONObjectMembers(member.value).forEach { _ in
                    count += 1
                    return count <= maximumFields
                }
            } else if !reservedKeyTexts.contains(member.key) {
                count += 1
            }
            return count <= maximumFields
        }
        return isObject ? count : 0
    }

    /// Decodes the reserved members and the first ``maximumFields`` fields, in the order they were written, and
    /// keeps the other members as text.
    private static func cut(_ members: JSONObjectMembers) -> Object? {
        var kept: [UInt8] = [UInt8(ascii: "{")]
        var keptFields: [UInt8] = [UInt8(ascii: "{")]
        var overflow: [UInt8] = [UInt8(ascii: "{")]
        var slots = maximumFields
        var overflowCount = 0
        var hasFields = false
        func add(_ member: JSONObjectMembers.Member, to text: inout [UInt8]) {
            if text.last != UInt8(ascii: "{") { text.append(UInt8(ascii: ",")) }
            text += member.text
        }
        func field(_ member: JSONObjectMembers.Member, to text: inout [UInt8]) {
            if slots > 0 {
                slots -= 1
                add(member, to: &text)
            } else {
                overflowCount += 1
                add(member, to: &overflow)
            }
        }
        let isObject = members.forEach { member in
            if member.key == fieldsKeyText, member.value.first == UInt8(ascii: "{") {
                hasFields = true
                _ = JSONObjectMembers(member.value).forEach { inner in
                    field(inner, to: &keptFields)
                    return true
                }
            } else if reservedKeyTexts.contains(member.key) {
                add(member, to: &kept)
            } else {
                field(member, to: &kept)
            }
            return true
        }
        guard isObject else { return nil }
        if hasFields {
            if kept.last != UInt8(ascii: "{") { kept.append(UInt8(ascii: ",")) }
            kept += fieldsKeyText
            kept.append(UInt8(ascii: ":"))
            kept += keptFields
            kept.append(UInt8(ascii: "}"))
        }
        kept.append(UInt8(ascii: "}"))
        overflow.append(UInt8(ascii: "}"))
        return decode(kept[...]).map { Object(members: $0, overflow: (overflow, overflowCount)) }
    }

    static func apply(_ parsed: Object, rawLine: ArraySlice<UInt8>, to record: inout LogRecord) {
        let object = parsed.members
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

        // Collected, then sorted once: an object may hold a thousand keys. Entries of "fields" win over top-level
        // keys of the same name; a value with no text form (null, an array, an object) sets nothing.
        var collected: [String: String] = [:]
        for (key, value) in object where !reservedKeys.contains(key) {
            collected[key] = value.text
        }
        if case .object(let fields)? = object["fields"] {
            for (key, value) in fields {
                collected[key] = value.text
            }
        }
        record.fields.merge(RecordFields(fromSender: collected.lazy.map { ($0.key, $0.value) }))
        if let overflow = parsed.overflow {
            record.message += "\n" + String(decoding: overflow.text, as: UTF8.self)
            record.fields[LogRecord.fieldsOverLimitField] = String(overflow.count)
        }
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
