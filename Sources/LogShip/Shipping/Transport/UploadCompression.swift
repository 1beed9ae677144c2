import CZstd
import CompressNIO
import NIOCore

/// How request bodies are compressed (`upload.compression`, `upload.compression_level`).
public enum UploadCompression: Hashable, Sendable, CustomStringConvertible {
    case none
    /// `Content-Encoding: gzip`, zlib's level from 1 (fastest) to 9 (smallest).
    case gzip(level: Int)
    /// `Content-Encoding: zstd` (RFC 8878), what the OTel Collector, Vector and systemd-journal-remote 258 take:
    /// level 1 (fastest) to 19 (smallest; above it zstd wants far more memory to decompress).
    case zstd(level: Int)

    /// What `upload.compression` names, without a level.
    public static let names = ["none", "gzip", "zstd"]

    /// The levels `upload.compression_level` may give the compression `name`, and the one it has without.
    public static func levels(of name: String) -> (range: ClosedRange<Int>, default: Int)? {
        switch name {
        case "gzip": (1...9, 6)
        case "zstd": (1...19, 3)
        default: nil
        }
    }

    /// The compression `name` names at `level`; `nil` for a name it does not know or a level out of its range.
    public init?(name: String, level: Int? = nil) {
        guard name != "none" else {
            guard level == nil else { return nil }
            self = .none
            return
        }
        guard let levels = Self.levels(of: name) else { return nil }
        let level = level ?? levels.default
        guard levels.range.contains(level) else { return nil }
        self = name == "gzip" ? .gzip(level: level) : .zstd(level: level)
    }

    /// The request's `Content-Encoding`; `nil` when bodies go as they are.
    public var contentEncoding: String? {
        switch self {
        case .none: nil
        case .gzip: "gzip"
        case .zstd: "zstd"
        }
    }

    public var description: String {
        switch self {
        case .none: "none"
        case .gzip(let level): "gzip level \(level)"
        case .zstd(let level): "zstd level \(level)"
        }
    }

    /// `body` compressed, as sent with ``contentEncoding``.
    public func compress(_ body: ByteBuffer) throws -> ByteBuffer {
        switch self {
        case .none:
            return body
        case .gzip(let level):
            var input = body
            let configuration = ZlibConfiguration(compressionLevel: Int32(level))
            let compressor = CompressionAlgorithm.gzip(configuration: configuration).compressor
            try compressor.startStream()
            defer { try? compressor.finishStream() }
            var output = ByteBufferAllocator().buffer(capacity: compressor.maxSize(from: input))
            try compressor.streamDeflate(from: &input, to: &output, flush: .finish)
            return output
        case .zstd(let level):
            return try Self.zstd(body, level: Int32(level))
        }
    }

    /// One zstd frame of `body`, its size in the header (so a receiver can refuse a too large body before it
    /// decompresses it).
    private static func zstd(_ body: ByteBuffer, level: Int32) throws -> ByteBuffer {
        var output = ByteBufferAllocator().buffer(capacity: ZSTD_compressBound(body.readableBytes))
        var failure: Int?
        _ = body.withUnsafeReadableBytes { input in
            output.writeWithUnsafeMutableBytes(minimumWritableBytes: ZSTD_compressBound(input.count)) { buffer in
                let written = ZSTD_compress(buffer.baseAddress, buffer.count, input.baseAddress, input.count, level)
                guard ZSTD_isError(written) == 0 else {
                    failure = written
                    return 0
                }
                return written
            }
        }
        if let failure { throw UploadCompressionError(reason: String(cString: ZSTD_getErrorName(failure))) }
        return output
    }
}

/// zstd could not compress a body (it runs out of memory, nothing else).
struct UploadCompressionError: Error, CustomStringConvertible {
    var reason: String
    var description: String { "zstd: \(reason)" }
}
