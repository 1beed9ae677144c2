import CZstd
import NIOCore

/// A `Content-Encoding: zstd` request body, decompressed frame after frame up to a limit.
enum ZstdBody {
    /// Why a body does not decompress.
    enum Failure: Error {
        case damaged(String)
        case tooLarge
    }

    /// The bytes `body` decompresses to.
    ///
    /// - Throws: ``Failure/tooLarge`` as soon as they pass `maximumBytes`, so that a small body that would
    ///   decompress to gigabytes costs nothing; ``Failure/damaged`` for anything that is not whole zstd frames.
    static func decompress(_ body: ByteBuffer, maximumBytes: Int) throws(Failure) -> ByteBuffer {
        guard let stream = ZSTD_createDStream() else { throw .damaged("no memory for a decompression stream") }
        defer { ZSTD_freeDStream(stream) }
        var output = ByteBufferAllocator().buffer(capacity: min(maximumBytes, 4 * body.readableBytes))
        var frameEnded = true
        let failure: Failure? = body.withUnsafeReadableBytes { compressed in
            var input = ZSTD_inBuffer(src: compressed.baseAddress, size: compressed.count, pos: 0)
            let chunk = ZSTD_DStreamOutSize()
            var produced = 0
            // Until the input is used up and the last call had room to spare: a full output may hold back more.
            repeat {
                let before = output.writerIndex
                var result = 0
                output.writeWithUnsafeMutableBytes(minimumWritableBytes: chunk) { room in
                    var out = ZSTD_outBuffer(dst: room.baseAddress, size: chunk, pos: 0)
                    result = ZSTD_decompressStream(stream, &out, &input)
                    return out.pos
                }
                if ZSTD_isError(result) != 0 { return .damaged(String(cString: ZSTD_getErrorName(result))) }
                if output.readableBytes > maximumBytes { return .tooLarge }
                produced = output.writerIndex - before
                // 0: a frame has just ended; more input may start another.
                frameEnded = result == 0
            } while input.pos < input.size || produced == chunk
            return nil
        }
        if let failure { throw failure }
        guard frameEnded else { throw .damaged("the body ends inside a frame") }
        return output
    }
}
