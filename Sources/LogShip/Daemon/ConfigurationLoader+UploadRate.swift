import Foundation

/// The link's budget, `upload.rate.*`: its keys, and the rules across them.
extension ConfigValues {
    /// Reads `upload.rate.*` into `budget`; `exempt` is the file's `upload.rate.exempt` list, if it has one.
    mutating func readUploadRate(into budget: inout UploadRateBudget, exempt: [String]?) {
        read("upload.rate.bytes_per_second", into: &budget.bytesPerSecond, .byteRate)
        read("upload.rate.requests_per_second", into: &budget.requestsPerSecond, .requestRate)
        read("upload.rate.burst_seconds", into: &budget.burstSeconds, .number(0.01...3600))
        read("upload.rate.min_bytes_per_second", into: &budget.minimumBytesPerSecond, .minimumByteRate)
        var exempt = exempt ?? budget.exempt.sorted(by: >).map(\.description)
        read("upload.rate.exempt", into: &exempt, .list)
        var classes: Set<PriorityClass> = []
        for name in exempt {
            guard let priorityClass = PriorityClass(name: name) else {
                problems.append(
                    "upload.rate.exempt: unknown class \"\(name)\" (expected crash, error, warning, info or debug)")
                continue
            }
            classes.insert(priorityClass)
        }
        budget.exempt = classes
    }
}

extension ConfigurationLoader {
    /// A byte budget must let one record of the largest size through at once, and must not be below its floor.
    static func uploadRateProblems(_ budget: UploadRateBudget, maxRecordBytes: Int) -> [String] {
        guard let rate = budget.bytesPerSecond else { return [] }
        var problems: [String] = []
        let burst = Double(rate) * budget.burstSeconds
        if burst < Double(maxRecordBytes) {
            problems.append(
                "upload.rate.bytes_per_second (\(ByteRateText.format(rate))) over upload.rate.burst_seconds "
                    + "(\(budget.burstSeconds.formatted())) allows \(ConfigurationText.bytes(Int(burst))) at once, "
                    + "less than one record of ingest.max_record_bytes (\(ConfigurationText.bytes(maxRecordBytes))): "
                    + "raise either to at least that")
        }
        if budget.minimumBytesPerSecond > rate {
            problems.append(
                "upload.rate.min_bytes_per_second (\(ByteRateText.format(budget.minimumBytesPerSecond))) "
                    + "must not exceed upload.rate.bytes_per_second (\(ByteRateText.format(rate)))")
        }
        return problems
    }
}

extension ValueParser<Int?> {
    /// A byte rate (``ByteRateText``), or `0` or `off` for none.
    static let byteRate = ValueParser(expected: "\(ByteRateText.expected), or 0 or off for none") { text in
        switch ByteRateText.parse(text) {
        case .off: return .some(nil)
        case .bytesPerSecond(let rate): return rate
        case nil: return nil
        }
    }
}

extension ValueParser<Double?> {
    /// Requests per second, or `0` for none.
    static let requestRate = ValueParser(
        expected: "a number of requests per second up to 1000000, or 0 for none"
    ) { text in
        guard let rate = ValueParser<Double>.number(0...1_000_000).parse(text) else { return nil }
        return .some(rate > 0 ? rate : nil)
    }
}

extension ValueParser<Int> {
    /// A byte rate of at least 1 byte per second.
    static let minimumByteRate = ValueParser(expected: ByteRateText.expected) { text in
        guard case .bytesPerSecond(let rate) = ByteRateText.parse(text) else { return nil }
        return rate
    }
}
