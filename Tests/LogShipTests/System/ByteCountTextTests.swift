import LogShip
import Testing

@Suite("Byte counts for people")
struct ByteCountTextTests {
    static let examples: [(Int, String)] = [
        (0, "0 B"), (900, "900 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (7680, "7.5 KiB"), (74_752, "73 KiB"),
        (10_485_760, "10 MiB"), (268_435_456, "256 MiB"), (1_073_741_824, "1.0 GiB"), (1_610_612_736, "1.5 GiB"),
        (5_497_558_138_880, "5.0 TiB"), (2_251_799_813_685_248, "2048 TiB"),
    ]

    @Test(
        "byte counts read in the configuration's binary units",
        arguments: Self.examples)
    func approximate(count: Int, text: String) {
        #expect(ByteCountText.approximate(count) == text)
    }
}
