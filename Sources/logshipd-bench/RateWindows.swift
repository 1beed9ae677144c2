/// Bytes the receiver saw within sliding windows of a drain, against a budget.
///
/// A window holds the requests whose bodies arrived within it. Requests are whole, so a window of a few
/// requests' length holds one more or one fewer than the budget's share depending on where it starts: the
/// worst windows are found among those that start at an arrival (holding it) and those that start just after one
/// (not holding it), which between them take every count a window of that length can hold.
struct RateWindows {
    /// Arrival times in seconds from the first, ascending, and each request's body bytes.
    private let times: [Double]
    /// `prefix[i]`: the bytes of the requests before `i`.
    private let prefix: [Int]

    init(_ arrivals: [(seconds: Double, bytes: Int)]) {
        let sorted = arrivals.sorted { $0.seconds < $1.seconds }
        times = sorted.map(\.seconds)
        var sum = 0
        prefix = [0] + sorted.map { arrival in
            sum += arrival.bytes
            return sum
        }
    }

    /// The bytes of the requests that arrived in `[start, end)`.
    func bytes(from start: Double, to end: Double) -> Int {
        prefix[firstIndex(atOrAfter: end)] - prefix[firstIndex(atOrAfter: start)]
    }

    /// The worst deviations from `budget` (bytes per second) of a window `length` seconds long lying within
    /// `range`: the largest excess and the largest shortfall, as fractions of the budget's share (0.1: 10% more);
    /// `nil` when no window of that length fits.
    func worst(length: Double, within range: ClosedRange<Double>, budget: Double) -> (over: Double, under: Double)? {
        guard range.upperBound - range.lowerBound >= length else { return nil }
        let share = budget * length
        var over = -Double.infinity
        var under = Double.infinity
        // Just after an arrival: a window that starts there leaves that request out.
        let after = 1e-9
        var starts = [range.lowerBound, range.upperBound - length]
        for time in times where time >= range.lowerBound && time + length <= range.upperBound {
            starts.append(time)
            if time + after + length <= range.upperBound { starts.append(time + after) }
        }
        for start in starts {
            let deviation = Double(bytes(from: start, to: start + length)) / share - 1
            over = max(over, deviation)
            under = min(under, deviation)
        }
        return (over, -under)
    }

    private func firstIndex(atOrAfter time: Double) -> Int {
        var low = 0
        var high = times.count
        while low < high {
            let middle = (low + high) / 2
            if times[middle] < time { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
