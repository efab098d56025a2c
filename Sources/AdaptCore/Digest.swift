import CCrypto
import Foundation

/// A SHA-256 digest: the name of every blob and the fingerprint of every input and output.
public struct Digest: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    /// Lowercase hexadecimal, 64 characters.
    public let hex: String

    /// Accepts 64 hexadecimal characters (any case); nil otherwise.
    public init?(hex: String) {
        let lower = hex.lowercased()
        guard lower.count == 64, lower.allSatisfy({ $0.isHexDigit }) else { return nil }
        self.hex = lower
    }

    init(bytes: [UInt8]) {
        self.hex = Digest.hex(bytes)
    }

    /// The 32 raw bytes, e.g. to compare with a digest stored in binary at the end of a file.
    public var bytes: [UInt8] {
        let digits = Array(hex.utf8)
        return (0..<digits.count / 2).map { i in Digest.nibble(digits[2 * i]) << 4 | Digest.nibble(digits[2 * i + 1]) }
    }

    /// Lowercase hexadecimal of raw bytes, without a formatter call per byte.
    public static func hex<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func nibble(_ digit: UInt8) -> UInt8 {
        digit <= UInt8(ascii: "9") ? digit - UInt8(ascii: "0") : digit - UInt8(ascii: "a") + 10
    }

    public var description: String { hex }
    /// The first 12 hex characters, for tables and messages.
    public var short: String { String(hex.prefix(12)) }

    public static func < (a: Digest, b: Digest) -> Bool { a.hex < b.hex }

    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let digest = Digest(hex: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                    debugDescription: "not a SHA-256 hex digest"))
        }
        self = digest
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }

    public static func sha256(_ data: Data) -> Digest {
        var hasher = SHA256()
        hasher.update(data)
        return hasher.finalize()
    }

    public static func sha256(_ text: String) -> Digest { sha256(Data(text.utf8)) }

    /// Streams a file through SHA-256 in 1 MiB reads, so a 100 MB model never sits in memory twice.
    public static func sha256(fileAt url: URL) throws -> Digest {
        try RegularFile.requireReadable(url)
        guard let handle = try? FileHandle(forReadingFrom: url) else {
            throw CoreError.fileUnreadable(path: url.path, reason: "cannot open it")
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        while true {
            let chunk = try handle.read(upToCount: 1 << 20) ?? Data()
            if chunk.isEmpty { break }
            hasher.update(chunk)
        }
        return hasher.finalize()
    }
}

/// Incremental SHA-256 over OpenSSL's EVP interface; the only code in the project that calls libcrypto.
public struct SHA256: ~Copyable {
    private let context: OpaquePointer

    public init() {
        guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
            preconditionFailure("OpenSSL could not initialise SHA-256")
        }
        self.context = context
    }

    deinit { EVP_MD_CTX_free(context) }

    public mutating func update(_ data: Data) {
        data.withUnsafeBytes { raw in
            guard let base = raw.baseAddress, raw.count > 0 else { return }
            _ = EVP_DigestUpdate(context, base, raw.count)
        }
    }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        _ = EVP_DigestUpdate(context, base, bytes.count)
    }

    public mutating func update(_ text: String) { update(Data(text.utf8)) }

    /// An independent hasher that has seen exactly the bytes this one has. SHA-256 only appends to its state,
    /// so hashing a prefix once and forking gives the digest of the prefix and of any longer message in one
    /// pass over the shared bytes (an adapter file's body and the whole file, for instance).
    public func fork() -> SHA256 {
        SHA256(copying: context)
    }

    private init(copying source: OpaquePointer) {
        guard let context = EVP_MD_CTX_new(), EVP_MD_CTX_copy_ex(context, source) == 1 else {
            preconditionFailure("OpenSSL could not copy a SHA-256 state")
        }
        self.context = context
    }

    public consuming func finalize() -> Digest {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        _ = EVP_DigestFinal_ex(context, &out, &length)
        return Digest(bytes: out)
    }
}
