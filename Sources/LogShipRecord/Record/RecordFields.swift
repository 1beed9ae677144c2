/// A record's extra key-value data, kept sorted by key.
///
/// A record carries a handful of fields (a syslog tag and PID, a few structured-data parameters), and they are
/// written in key order on the wire: a sorted array does both without hashing, and fields added in key order
/// (as the parsers add theirs) are appended.
public struct RecordFields: Hashable, Sendable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    public typealias Element = (key: String, value: String)

    /// Sorted by key; no key twice.
    private var pairs: [Element]

    public init() {
        pairs = []
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        // `[:]`, the default of every record's fields, skips the sort.
        guard !elements.isEmpty else {
            self.init()
            return
        }
        self.init(elements)
    }

    public init(_ dictionary: [String: String]) {
        self.init(dictionary.lazy.map { ($0.key, $0.value) })
    }

    /// Fields in any order, sorted once; of a key given twice, the later value is kept.
    public init(_ elements: some Sequence<(String, String)>) {
        var sorted = Array(elements.enumerated())
        sorted.sort { $0.element.0 < $1.element.0 || ($0.element.0 == $1.element.0 && $0.offset < $1.offset) }
        pairs = []
        pairs.reserveCapacity(sorted.count)
        for (_, (key, value)) in sorted {
            if let last = pairs.last, last.key == key {
                pairs[pairs.count - 1].value = value
            } else {
                pairs.append((key, value))
            }
        }
    }

    /// Adds `other`'s fields, whose values win over these for a key both have: one pass over both, however
    /// many there are (setting them one by one costs a move of the later ones each).
    public mutating func merge(_ other: RecordFields) {
        guard !other.isEmpty else { return }
        guard !isEmpty else {
            self = other
            return
        }
        var merged: [Element] = []
        merged.reserveCapacity(pairs.count + other.pairs.count)
        var mine = pairs.makeIterator(), theirs = other.pairs.makeIterator()
        var left = mine.next(), right = theirs.next()
        while let l = left, let r = right {
            if l.key < r.key {
                merged.append(l)
                left = mine.next()
            } else {
                if l.key == r.key { left = mine.next() }
                merged.append(r)
                right = theirs.next()
            }
        }
        while let l = left {
            merged.append(l)
            left = mine.next()
        }
        while let r = right {
            merged.append(r)
            right = theirs.next()
        }
        pairs = merged
    }

    /// The value for `key`; setting `nil` removes the field.
    public subscript(key: String) -> String? {
        get {
            let index = insertionIndex(of: key)
            return index < pairs.endIndex && pairs[index].key == key ? pairs[index].value : nil
        }
        set {
            // Fields usually arrive in key order: the new key goes last.
            if let last = pairs.last, last.key < key {
                if let newValue { pairs.append((key, newValue)) }
                return
            }
            let index = insertionIndex(of: key)
            let exists = index < pairs.endIndex && pairs[index].key == key
            switch (newValue, exists) {
            case (let value?, true): pairs[index].value = value
            case (let value?, false): pairs.insert((key, value), at: index)
            case (nil, true): pairs.remove(at: index)
            case (nil, false): break
            }
        }
    }

    public var isEmpty: Bool { pairs.isEmpty }
    public var count: Int { pairs.count }

    /// The fields in key order.
    public func makeIterator() -> IndexingIterator<[Element]> {
        pairs.makeIterator()
    }

    /// The fields as a dictionary.
    public var dictionary: [String: String] {
        Dictionary(uniqueKeysWithValues: pairs.map { ($0.key, $0.value) })
    }

    /// Makes room for `count` fields in all.
    public mutating func reserveCapacity(_ count: Int) {
        pairs.reserveCapacity(count)
    }

    public var description: String { dictionary.description }

    public static func == (lhs: RecordFields, rhs: RecordFields) -> Bool {
        lhs.pairs.elementsEqual(rhs.pairs) { $0.key == $1.key && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(pairs.count)
        for (key, value) in pairs {
            hasher.combine(key)
            hasher.combine(value)
        }
    }

    /// The index of the first pair whose key is not less than `key`.
    private func insertionIndex(of key: String) -> Int {
        var low = pairs.startIndex
        var high = pairs.endIndex
        while low < high {
            let middle = (low + high) / 2
            if pairs[middle].key < key { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

extension RecordFields {
    /// Field names only logshipd sets, from what the host vouches for: the journal's crash evidence
    /// (``CrashEvidence``), a crash claim taken back (``LogRecord/demotedFromField``) and fields left in the
    /// message (``LogRecord/fieldsOverLimitField``).
    package static let setByTheDaemon: Set<String> = CrashEvidence.recordFieldNames.union([
        LogRecord.demotedFromField, LogRecord.fieldsOverLimitField,
    ])

    /// A sender's field name: under `sender_` when it is one only logshipd sets, so that a sender's
    /// `crash_reason` or `demoted_from` is kept but never taken for the daemon's.
    package static func senderName(_ name: String) -> String {
        setByTheDaemon.contains(name) ? "sender_" + name : name
    }

    /// Fields a sender gave, each named by ``senderName(_:)``.
    package init(fromSender fields: some Sequence<(String, String)>) {
        self.init(fields.lazy.map { (Self.senderName($0.0), $0.1) })
    }
}
