import Contracts
import Crypto
import Foundation
import ProjectionChangelog
import Projections
import NIOCore
import WireCodec

/// Rows in the text format of `COPY … FROM STDIN`, written straight into a `ByteBuffer`
/// (docs/ARCHITECTURE.md#changelog-and-restore): no value becomes a `String` or a boxed
/// parameter on the way, which is where the multi-row statements spent the client's time.
///
/// Each value is written as the server's input function for its column reads it, so that the
/// stored rows are the ones `PostgresMutationWriter`'s parameters give: UUIDs as lower-case
/// text, dates as their milliseconds (`ProjectionValues.millis`), booleans `t`/`f`, and a
/// device token's key as the hex `bytea` of its SHA-256, the digest `PostgresRows.tokenKey`
/// computes in SQL. In text the format's own bytes are escaped (backslash, tab, newline,
/// carriage return: a value holds any Unicode the API accepts), and NULL is `\N`; every other
/// byte, UTF-8 included, stands for itself. The backslash of a `bytea`'s `\x` is doubled for
/// the same reason.
struct PostgresCopyText: ColumnWriter {
    private(set) var buffer: ByteBuffer

    init(capacity: Int) {
        buffer = ByteBufferAllocator().buffer(capacity: capacity)
    }

    /// The rows written so far, handed over; the next rows go to a new buffer (the one sent is
    /// still being written to the socket).
    mutating func take() -> ByteBuffer {
        let taken = buffer
        buffer = ByteBufferAllocator().buffer(capacity: taken.capacity)
        return taken
    }

    // Every value is followed by a tab; `endRow` turns the row's last one into its newline.

    mutating func endRow() {
        buffer.moveWriterIndex(to: buffer.writerIndex - 1)
        buffer.writeInteger(Self.newline)
    }

    mutating func null() {
        buffer.writeInteger(Self.backslash)
        buffer.writeInteger(UInt8(ascii: "N"))
        buffer.writeInteger(Self.tab)
    }

    mutating func uuid(_ value: UUID) {
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 37) { raw in
            let out = raw.bindMemory(to: UInt8.self)
            UUIDHex.write(value, to: out)
            out[36] = Self.tab
            return 37
        }
    }

    mutating func uuid(_ value: UUID?) {
        if let value { uuid(value) } else { null() }
    }

    mutating func int(_ value: Int64) {
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 21) { raw in
            // At most a sign and 19 digits, written from the end, then moved to the start.
            var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
            return withUnsafeMutableBytes(of: &digits) { scratch in
                var at = scratch.count
                var magnitude = value.magnitude
                repeat {
                    at -= 1
                    scratch[at] = UInt8(truncatingIfNeeded: 0x30 &+ magnitude % 10)
                    magnitude /= 10
                } while magnitude > 0
                if value < 0 {
                    at -= 1
                    scratch[at] = 0x2d
                }
                let count = scratch.count - at
                raw.baseAddress!.copyMemory(from: scratch.baseAddress! + at, byteCount: count)
                raw[count] = Self.tab
                return count + 1
            }
        }
    }

    mutating func int(_ value: Int64?) {
        if let value { int(value) } else { null() }
    }

    mutating func bool(_ value: Bool) {
        buffer.writeInteger(value ? UInt8(ascii: "t") : UInt8(ascii: "f"))
        buffer.writeInteger(Self.tab)
    }

    mutating func millis(_ date: Date) {
        int(ProjectionValues.millis(date))
    }

    mutating func text(_ value: String) {
        // `withUTF8` gives the native string's own bytes: one scan, then bulk copies.
        var value = value
        value.withUTF8 { utf8 in
            let raw = UnsafeRawBufferPointer(utf8)
            var start = 0
            for (i, byte) in utf8.enumerated() {
                let escaped: UInt8
                switch byte {
                case Self.backslash: escaped = Self.backslash
                case Self.tab: escaped = UInt8(ascii: "t")
                case Self.newline: escaped = UInt8(ascii: "n")
                case Self.carriageReturn: escaped = UInt8(ascii: "r")
                default: continue
                }
                buffer.writeBytes(UnsafeRawBufferPointer(rebasing: raw[start..<i]))
                buffer.writeInteger(Self.backslash)
                buffer.writeInteger(escaped)
                start = i + 1
            }
            buffer.writeBytes(UnsafeRawBufferPointer(rebasing: raw[start...]))
        }
        buffer.writeInteger(Self.tab)
    }

    mutating func text(_ value: String?) {
        if let value { text(value) } else { null() }
    }

    /// `bytea` in its hex form (`\\x…`, the backslash escaped).
    mutating func bytes(_ value: Data) {
        buffer.writeInteger(Self.backslash)
        buffer.writeInteger(Self.backslash)
        buffer.writeInteger(UInt8(ascii: "x"))
        for byte in value {
            buffer.writeInteger(UUIDHex.digit(byte >> 4))
            buffer.writeInteger(UUIDHex.digit(byte & 0x0f))
        }
        buffer.writeInteger(Self.tab)
    }

    /// `PostgresRows.tokenKey` of `token`: the SHA-256 of its UTF-8 bytes, as `bytea` hex.
    mutating func tokenKey(_ token: String) {
        var token = token
        var hash = SHA256()
        token.withUTF8 { hash.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        let digest = hash.finalize()
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 3 + 64 + 1) { raw in
            // `\\x`: the format's escape of the backslash that starts `bytea`'s hex form.
            raw[0] = Self.backslash
            raw[1] = Self.backslash
            raw[2] = UInt8(ascii: "x")
            var at = 3
            digest.withUnsafeBytes { bytes in
                for byte in bytes {
                    raw[at] = UUIDHex.digit(byte >> 4)
                    raw[at + 1] = UUIDHex.digit(byte & 0x0f)
                    at += 2
                }
            }
            raw[at] = Self.tab
            return at + 1
        }
    }

    private static let tab = UInt8(ascii: "\t"), newline = UInt8(ascii: "\n"), carriageReturn = UInt8(ascii: "\r")
    private static let backslash = UInt8(ascii: "\\")
}
