/// Random fractions for the spread of delays (a backoff's, a crash probe's), from a seed: the daemon seeds it at
/// random, a test with a number it can repeat. SplitMix64, which is plenty for spreading timers.
struct Jitter: Sendable {
    private var state: UInt64

    /// - Parameter seed: The same seed gives the same fractions; by default a random one.
    init(seed: UInt64 = .random(in: .min ... .max)) {
        state = seed
    }

    /// A fraction in `0...1`.
    mutating func next() -> Double {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        mixed ^= mixed >> 31
        return Double(mixed >> 11) / Double(1 << 53 - 1)
    }
}
