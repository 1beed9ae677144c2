/// A request's record ids (``RecordIDs``) as the encoders write them: the prefix every id shares made once, each
/// record's sequence in decimal after it.
struct RecordIDText {
    /// `<instance>-<class>-`.
    let prefix: [UInt8]
    let sequences: [Int64]

    init(_ ids: RecordIDs) {
        prefix = ids.prefix
        sequences = ids.sequences
    }

    /// The most bytes one id takes: its prefix and the digits of the largest sequence.
    var maximumLength: Int { prefix.count + 20 }

    /// The length of the `index`th record's id.
    func length(_ index: Int) -> Int {
        var digits = 1
        var rest = sequences[index] / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        return prefix.count + digits
    }
}

extension BodyWriter {
    /// The `index`th record's id, without quotes (it needs no escaping: hexadecimal digits, a class name,
    /// dashes and decimal digits).
    mutating func write(_ ids: RecordIDText, _ index: Int) {
        ids.prefix.withUnsafeBufferPointer { write($0) }
        writeDecimal(UInt64(ids.sequences[index]))
    }
}

extension RecordIDText {
    /// `"id":""` and the comma after the value: what ``BodyWriter/write(_:withID:_:)`` adds besides the id.
    static let keyLength = 9
}

extension BodyWriter {
    /// A spooled line with the `index`th record's id as its first key: `{"id":"…",` and the rest of the line,
    /// whose first key is always `timestamp`. A line that is not an object (never a record's) goes as it is.
    mutating func write(_ line: UnsafeBufferPointer<UInt8>, withID ids: RecordIDText, _ index: Int) {
        guard line.count > 2, line.first == UInt8(ascii: "{") else {
            write(line)
            return
        }
        write(#"{"id":""#)
        write(ids, index)
        write(#"","#)
        write(UnsafeBufferPointer(rebasing: line.dropFirst()))
    }
}
