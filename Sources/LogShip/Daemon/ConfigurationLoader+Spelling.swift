extension ConfigurationLoader {
    /// `LOGSHIPD_` variables that belong to logshipd's other programs, not to the configuration: logctl's socket,
    /// and the file the benchmark writes its requests to.
    static let otherVariables: Set<String> = ["LOGSHIPD_CONTROL", "LOGSHIPD_BENCH_DUMP"]

    /// The environment variable that overrides `key`: `LOGSHIPD_` and the key path in upper case, dots as
    /// underscores.
    static func variable(for key: String) -> String {
        "LOGSHIPD_" + key.uppercased().replacingOccurrences(of: ".", with: "_")
    }

    /// A line for each `LOGSHIPD_` variable in `environment` that overrides no key (a typo such as
    /// `LOGSHIPD_UPLOAD_TIMEOUTT` would otherwise be ignored without a word), naming the nearest variable that does.
    static func unknownVariables(in environment: [String: String]) -> [String] {
        let known = Set(knownKeys.map(variable(for:))).union(otherVariables)
        return environment.keys.filter { $0.hasPrefix("LOGSHIPD_") && !known.contains($0) }.sorted().map { name in
            "\(name) overrides no configuration key and is ignored" + suggestion(for: name, among: known)
        }
    }

    /// `; did you mean NAME?` with the one of `names` nearest to `name` (fewest letters added, removed or changed),
    /// when it is near enough to be a typo of it; empty otherwise.
    static func suggestion(for name: String, among names: some Sequence<String>) -> String {
        let scored = names.map { ($0, editDistance(name, $0)) }
        guard let (nearest, distance) = scored.min(by: { ($0.1, $0.0) < ($1.1, $1.0) }),
            distance <= max(2, name.count / 4)
        else { return "" }
        return "; did you mean \(nearest)?"
    }

    /// The Levenshtein distance between `a` and `b`, over their bytes.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8), b = Array(b.utf8)
        var previous = Array(0...b.count)
        for (i, byteA) in a.enumerated() {
            var current = [i + 1]
            for (j, byteB) in b.enumerated() {
                current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (byteA == byteB ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }
}
