import CZstd
import Synchronization

/// How a chunk's lines are stored in the `chunk` table's `lines` column (its `compression` column).
///
/// Chunks are compressed with zstd (level 1) before they are written. Intake into the durable spool is
/// bound by the disk, not the CPU: every commit waits for the WAL to reach it, and every byte is written twice
/// (the WAL, then the database file at a checkpoint). NDJSON lines carry the same keys and much the same values
/// line after line, so they compress many times over for little CPU, and fewer bytes go through the kernel
/// (BENCHMARKS.md, Measured choices).
enum ChunkCompression: Int, Sendable {
    /// The lines as they are, each followed by a newline.
    case none = 0
    /// One zstd frame of those bytes.
    case zstd = 1

    /// zstd's level: on system logs, level 3 compressed no better and more slowly, the fast levels a little faster
    /// and a quarter less (BENCHMARKS.md, Measured choices).
    static let level: Int32 = 1

    /// The form to store `lines` in: compressed, unless that would not make them smaller.
    static func stored(_ lines: [UInt8]) -> (compression: ChunkCompression, blob: [UInt8]) {
        guard !lines.isEmpty, let compressed = compressor.withLock({ $0.compress(lines) }),
              compressed.count < lines.count
        else { return (.none, lines) }
        return (.zstd, compressed)
    }

    /// The lines stored as `blob` in this form.
    ///
    /// - Parameter size: How many bytes the lines take, as recorded beside the blob.
    /// - Throws: ``ChunkDamage`` when the blob is not a zstd frame of `size` bytes, or `size` is out of range.
    func lines(fromBlob blob: UnsafeRawBufferPointer, size: Int) throws -> [UInt8] {
        switch self {
        case .none:
            // ChunkLines indexes lines with 32 bits; SQLite's own limit on a blob keeps far below that.
            guard blob.count <= SpoolChunk.maximumBytes else {
                throw ChunkDamage.undecodable("its lines take \(blob.count) bytes, more than a chunk can")
            }
            return Array(blob)
        case .zstd:
            guard (0...SpoolChunk.maximumBytes).contains(size) else {
                throw ChunkDamage.undecodable("a compressed chunk does not decompress: \(size) bytes were recorded")
            }
            // Checked before anything is allocated for it: a damaged row could record any size.
            let frameSize = ZSTD_getFrameContentSize(blob.baseAddress, blob.count)
            guard frameSize == UInt64(size) else {
                let found = frameSize == ZSTD_CONTENTSIZE_ERROR || frameSize == ZSTD_CONTENTSIZE_UNKNOWN
                    ? "no zstd frame header" : "a frame of \(frameSize) bytes"
                throw ChunkDamage.undecodable(
                    "a compressed chunk does not decompress: \(found) where \(size) bytes were recorded")
            }
            var failure: String?
            let lines = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                let written = ZSTD_decompress(buffer.baseAddress, size, blob.baseAddress, blob.count)
                if ZSTD_isError(written) != 0 {
                    failure = String(cString: ZSTD_getErrorName(written))
                } else if written != size {
                    failure = "\(written) bytes where \(size) were recorded"
                } else {
                    count = written
                }
            }
            if let failure { throw ChunkDamage.undecodable("a compressed chunk does not decompress: \(failure)") }
            return lines
        }
    }

    /// What can be read of a damaged `blob` in this form, whatever size its row records: the lines as stored, or
    /// those a zstd frame yields before its damage (a line cut by it left out), up to ``SpoolChunk/maximumBytes``.
    func readableLines(fromBlob blob: UnsafeRawBufferPointer) -> ChunkLines? {
        switch self {
        case .none:
            return blob.isEmpty || blob.count > SpoolChunk.maximumBytes ? nil : ChunkLines(blob: Array(blob))
        case .zstd:
            var (bytes, complete) = Self.decompressedPrefix(of: blob)
            if !complete {
                bytes.removeSubrange((bytes.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0)...)
            }
            return bytes.isEmpty ? nil : ChunkLines(blob: bytes)
        }
    }

    /// The bytes a zstd frame decompresses to until it ends, fails or reaches ``SpoolChunk/maximumBytes``, and
    /// whether the frame ended well.
    private static func decompressedPrefix(of blob: UnsafeRawBufferPointer) -> (bytes: [UInt8], complete: Bool) {
        guard let stream = ZSTD_createDStream() else { return ([], false) }
        defer { ZSTD_freeDStream(stream) }
        var input = ZSTD_inBuffer(src: blob.baseAddress, size: blob.count, pos: 0)
        var buffer = [UInt8](repeating: 0, count: ZSTD_DStreamOutSize())
        var bytes: [UInt8] = []
        while bytes.count < SpoolChunk.maximumBytes {
            let (result, produced) = buffer.withUnsafeMutableBytes { out in
                var output = ZSTD_outBuffer(dst: out.baseAddress, size: out.count, pos: 0)
                let result = ZSTD_decompressStream(stream, &output, &input)
                return (result, output.pos)
            }
            bytes += buffer.prefix(produced)
            if ZSTD_isError(result) != 0 { return (bytes, false) }
            if result == 0 { return (bytes, true) }
            // All input taken and nothing more coming out: the frame was cut short.
            if input.pos == input.size && produced < buffer.count { return (bytes, false) }
        }
        return (bytes, false)
    }

    /// One compression context for the process: chunks are compressed on the spool's writer, one at a time, and a
    /// context reused keeps its tables instead of allocating and clearing them for every chunk.
    private static let compressor = Mutex(Compressor())

    private struct Compressor: ~Copyable {
        /// `nil` if zstd could not allocate it: chunks are then stored as they are.
        let context: OpaquePointer? = ZSTD_createCCtx()

        deinit { ZSTD_freeCCtx(context) }

        /// `bytes` as one zstd frame, or `nil` should zstd fail.
        func compress(_ bytes: [UInt8]) -> [UInt8]? {
            guard let context else { return nil }
            let bound = ZSTD_compressBound(bytes.count)
            var succeeded = false
            let frame = [UInt8](unsafeUninitializedCapacity: bound) { buffer, count in
                let written = bytes.withUnsafeBytes { source in
                    ZSTD_compressCCtx(
                        context, buffer.baseAddress, bound, source.baseAddress, source.count, ChunkCompression.level)
                }
                guard ZSTD_isError(written) == 0 else { return }
                count = written
                succeeded = true
            }
            return succeeded ? frame : nil
        }
    }
}
