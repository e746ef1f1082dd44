internal import CZlib
import ProximaCore

/// zlib streams (RFC 1950 around RFC 1951 deflate) through the system zlib, bounded for outside bytes.
///
/// Google Smart Tap compresses a pass's record bundle with zlib when the terminal announces it can inflate; this is
/// the one place Proxima calls zlib. It lives beside the OpenSSL wrappers because, like them, it is a thin Swift
/// layer over a C library shared by the capabilities and the virtual cards.
public enum Zlib {
    /// Inflates one complete zlib stream, refusing more than `maximumOutput` bytes (a zip bomb stops there).
    /// Total: any bytes give the inflated bytes or an error.
    /// - Throws: `ProximaError.malformedData` for a truncated or corrupt stream, trailing bytes after it, or output
    ///   beyond `maximumOutput`.
    public static func inflate(_ data: [UInt8], maximumOutput: Int) throws -> [UInt8] {
        guard maximumOutput > 0 else { throw ProximaError(.invalidArgument, "zlib: maximumOutput must be positive") }
        var stream = z_stream()
        guard CZlib_inflateInit(&stream) == Z_OK else {
            throw ProximaError(.malformedData, "zlib: inflateInit failed")
        }
        defer { inflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: min(maximumOutput, max(256, data.count * 4)))
        var input = data
        var produced = 0
        let status: Int32 = input.withUnsafeMutableBufferPointer { inputBuffer in
            stream.next_in = inputBuffer.baseAddress
            stream.avail_in = UInt32(inputBuffer.count)
            while true {
                if produced == output.count {
                    guard output.count < maximumOutput else { return Z_BUF_ERROR }
                    output.append(
                        contentsOf: [UInt8](repeating: 0, count: min(output.count, maximumOutput - output.count))
                    )
                }
                let room = output.count - produced
                let result: Int32 = output.withUnsafeMutableBufferPointer { outputBuffer in
                    stream.next_out = outputBuffer.baseAddress.map { $0 + produced }
                    stream.avail_out = UInt32(room)
                    return CZlib.inflate(&stream, Z_NO_FLUSH)
                }
                produced += room - Int(stream.avail_out)
                switch result {
                case Z_STREAM_END: return stream.avail_in == 0 ? Z_STREAM_END : Z_DATA_ERROR
                case Z_OK: continue
                case Z_BUF_ERROR where stream.avail_out != 0: return Z_BUF_ERROR
                case Z_BUF_ERROR: continue
                default: return result
                }
            }
        }
        switch status {
        case Z_STREAM_END: return Array(output[0..<produced])
        case Z_BUF_ERROR where produced >= maximumOutput:
            throw ProximaError(.malformedData, "zlib: the stream inflates beyond \(maximumOutput) bytes")
        case Z_BUF_ERROR: throw ProximaError(.malformedData, "zlib: the stream is truncated after \(data.count) bytes")
        default: throw ProximaError(.malformedData, "zlib: the stream is corrupt (status \(status))")
        }
    }

    /// Deflates `data` into one zlib stream (the virtual phone's side and tests).
    /// - Throws: ``CryptoError/Code/libraryFailure`` if zlib fails.
    public static func deflate(_ data: [UInt8], level: Int32 = 6) throws -> [UInt8] {
        var stream = z_stream()
        guard CZlib_deflateInit(&stream, level) == Z_OK else { throw CryptoError(.libraryFailure, "zlib: deflateInit") }
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, UInt(data.count)))
        var output = [UInt8](repeating: 0, count: bound)
        var input = data
        let result: Int32 = input.withUnsafeMutableBufferPointer { inputBuffer in
            output.withUnsafeMutableBufferPointer { outputBuffer in
                stream.next_in = inputBuffer.baseAddress
                stream.avail_in = UInt32(inputBuffer.count)
                stream.next_out = outputBuffer.baseAddress
                stream.avail_out = UInt32(outputBuffer.count)
                return CZlib.deflate(&stream, Z_FINISH)
            }
        }
        guard result == Z_STREAM_END else { throw CryptoError(.libraryFailure, "zlib: deflate status \(result)") }
        return Array(output[0..<Int(stream.total_out)])
    }
}
