import Foundation
import Logging

extension ValueParser<String> {
    static let text = ValueParser(expected: "text") { $0 }

    static let nonEmptyText = ValueParser(expected: "a non-empty value") { $0.isEmpty ? nil : $0 }

    static func oneOf(_ choices: [String]) -> ValueParser {
        ValueParser(expected: "one of \(choices.joined(separator: ", "))") { choices.contains($0) ? $0 : nil }
    }

    /// `host:port` (``ListenAddress``: `127.0.0.1:9464`, `[::1]:9464`, `localhost:9464`); empty is off.
    static let listenAddress = ValueParser(
        expected: "host:port such as 127.0.0.1:9464 or [::1]:9464, or empty"
    ) { text in
        if text.isEmpty { return text }
        guard ListenAddress(text) != nil else { return nil }
        return text
    }

    /// An `http://` or `https://` URL with a host: one uploads can go to (``UploadEndpoint``).
    static let httpURL = ValueParser(expected: "an http:// or https:// URL with a host") { text in
        UploadEndpoint(url: text) == nil ? nil : text
    }
}

extension ValueParser<Int?> {
    /// A level of the compression `name` (``UploadCompression/levels(of:)``); none for `none`.
    static func compressionLevel(of name: String) -> ValueParser {
        guard let levels = UploadCompression.levels(of: name) else {
            return ValueParser(expected: "no level, since upload.compression is \(name)") { _ in nil }
        }
        let range = levels.range
        return ValueParser(expected: "a \(name) level from \(range.lowerBound) to \(range.upperBound)") { text in
            // Spelled out: a failed parse must be no value at all, not a value of `nil`.
            guard let level = Int(text.trimmingCharacters(in: .whitespaces)), range.contains(level) else { return nil }
            return level
        }
    }
}

extension ValueParser<[String]> {
    /// A comma-separated list (`a.service, b.service`); empty text is an empty list.
    static let list = ValueParser(expected: "a comma-separated list") { text in
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}

extension ValueParser<Severity> {
    /// A syslog severity: `0`…`7` or `emerg`, `alert`, `crit`, `err`, `warning`, `notice`, `info`, `debug`.
    static let severity = ValueParser(
        expected: "a severity 0-7 or emerg, alert, crit, err, warning, notice, info, debug"
    ) {
        Severity(text: $0.trimmingCharacters(in: .whitespaces))
    }
}

extension ValueParser<UploadFormat> {
    static let format = ValueParser(
        expected: "one of \(UploadFormat.allCases.map(\.rawValue).joined(separator: ", "))"
    ) {
        UploadFormat(rawValue: $0)
    }
}

extension ValueParser<JournalStartPosition> {
    static let journalStart = ValueParser(expected: "head or tail") { JournalStartPosition(rawValue: $0) }
}

extension ValueParser<UInt32> {
    /// An octal file mode such as `0660`.
    static let fileMode = ValueParser(expected: "an octal file mode such as \"0660\"") { text in
        guard let mode = UInt32(text, radix: 8), mode <= 0o7777 else { return nil }
        return mode
    }
}

extension ValueParser<Bool> {
    static let boolean = ValueParser(expected: "true or false") { text in
        switch text.lowercased() {
        case "true", "yes", "on", "1": true
        case "false", "no", "off", "0": false
        default: nil
        }
    }
}

extension ValueParser<[(String, String)]> {
    /// Headers from the environment: `Name: value` pairs separated by newlines or `;`.
    static let headerList = ValueParser(expected: "\"Name: value\" pairs separated by \";\"") { text in
        var headers: [(String, String)] = []
        for entry in text.split(whereSeparator: { $0 == "\n" || $0 == ";" }) {
            guard let colon = entry.firstIndex(of: ":") else { return nil }
            let name = entry[..<colon].trimmingCharacters(in: .whitespaces)
            let value = entry[entry.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty else { return nil }
            headers.append((name, value))
        }
        return headers
    }
}

extension ValueParser<Logger.Level> {
    static let logLevel = ValueParser(
        expected: "one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))"
    ) { Logger.Level(rawValue: $0.lowercased()) }
}
