import AdaptCore
import Foundation

/// The bytes of an adapter file whose trailing SHA-256 has been checked (and, when the caller knew it, the
/// digest of the whole file too). Only `AdapterFile.verify` makes one, and only this type can be decoded into
/// tensors: no weight is used before its bytes are proven intact.
public struct VerifiedAdapterBytes: Sendable {
    /// The file's bytes, exactly as read.
    public let data: Data
    /// The SHA-256 of the whole file: the adapter's digest, the name the blob store gives it.
    public let digest: Digest
    /// What errors call the file.
    public let name: String
    let headerLength: Int

    fileprivate init(data: Data, digest: Digest, name: String, headerLength: Int) {
        self.data = data
        self.digest = digest
        self.name = name
        self.headerLength = headerLength
    }
}

/// Reading an adapter file on the hot-swap path: one read, one hash, one copy per tensor.
///
/// A swap must stay under 8 ms (DESIGN.md) including the file, and SHA-256 of a rank-8 file (3.7 MB) is a
/// large part of that (BENCHMARKS.md, adapter hot swap), so the bytes are hashed exactly once. The body's
/// digest (the file's trailer) and the whole file's digest (its name in the blob store and the registry) come
/// from the same pass by forking the hash state after the body, which is why a reader that got the bytes from
/// the blob store may skip the store's own check and pass the expected digest here instead.
extension AdapterFile {
    static let fixedHeaderSize = 16
    static let trailerSize = 32

    /// The whole file in one read (`AtomicFile.read`).
    public static func readBytes(from url: URL) throws -> Data {
        let data: Data?
        do { data = try AtomicFile.read(url) } catch let error as CoreError {
            throw AdapterFileError.io("adapter file: \(error); check the path and its permissions")
        }
        guard let data else {
            throw AdapterFileError.io("adapter \(url.lastPathComponent) does not exist; check the path")
        }
        return data
    }

    /// Checks the magic, the version and the trailing SHA-256 of `data`, hashing it once. When `expectedDigest`
    /// is given (the name the bytes were stored under), the whole file's digest must equal it too, checked in
    /// the same pass. Throws `AdapterFileError` (`notThisFormat`, `unsupportedVersion`, `truncated`,
    /// `digestMismatch`); `name` only labels errors.
    public static func verify(_ data: Data, name: String, expectedDigest: Digest? = nil) throws -> VerifiedAdapterBytes {
        let minimum = fixedHeaderSize + trailerSize
        guard data.count >= minimum else { throw AdapterFileError.truncated(file: name, expected: minimum, actual: data.count) }
        let count = data.count
        let (magicMatches, version, headerLength, body, whole, trailer) = data.withUnsafeBytes { raw in
            let magicMatches = raw.prefix(8).elementsEqual(magic)
            let version = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
            let headerLength = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 12, as: UInt32.self)))
            var hasher = SHA256()
            hasher.update(UnsafeRawBufferPointer(rebasing: raw[0..<(count - trailerSize)]))
            var whole = hasher.fork()
            let trailer = UnsafeRawBufferPointer(rebasing: raw[(count - trailerSize)...])
            whole.update(trailer)
            return (magicMatches, version, headerLength, hasher.finalize(), whole.finalize(), Array(trailer))
        }
        guard magicMatches else { throw AdapterFileError.notThisFormat(file: name, expected: "an adapt adapter file") }
        guard version >= 1, version <= AdapterFile.version else {
            throw AdapterFileError.unsupportedVersion(file: name, version: version, supported: AdapterFile.version)
        }
        guard headerLength <= count - minimum else {
            throw AdapterFileError.truncated(file: name, expected: minimum + headerLength, actual: count)
        }
        if let expectedDigest, whole != expectedDigest {
            throw AdapterFileError.digestMismatch(file: name, expected: expectedDigest.hex, actual: whole.hex)
        }
        guard body.bytes == trailer else {
            // A cut-short file is reported as truncated when its header still says how long it should be.
            if let declared = declaredSize(data, headerLength: headerLength), declared > count {
                throw AdapterFileError.truncated(file: name, expected: declared, actual: count)
            }
            throw AdapterFileError.digestMismatch(file: name, expected: Digest.hex(trailer), actual: body.hex)
        }
        return VerifiedAdapterBytes(data: data, digest: whole, name: name, headerLength: headerLength)
    }

    /// The metadata and tensors of verified bytes: the JSON header, then one bulk copy per tensor.
    public static func decode(_ verified: VerifiedAdapterBytes) throws -> AdapterFile {
        let data = verified.data, name = verified.name, headerLength = verified.headerLength
        guard let header = header(data, headerLength: headerLength) else {
            throw AdapterFileError.malformed(file: name, field: "header", reason: "is not the expected JSON")
        }
        // Alpha scales every adapted projection: zero, negative or non-finite makes the adapter meaningless.
        guard AdapterSettings.isPlausible(alpha: Double(header.metadata.alpha)) else {
            throw AdapterFileError.malformed(file: name, field: "alpha",
                                             reason: "is \(header.metadata.alpha), not a number above 0 and at most \(AdapterSettings.maximumAlpha)")
        }
        guard header.metadata.rank > 0 else {
            throw AdapterFileError.malformed(file: name, field: "rank", reason: "is \(header.metadata.rank), not a positive number")
        }
        // Every count is bounded by the bytes the file has, checked without overflow: the header is text
        // anyone can edit, and its digest only proves the file was not changed after it was written.
        let capacity = data.count / 4
        var total = 0
        var counts: [Int] = []
        var seen = Set<String>()
        for tensor in header.tensors {
            guard !tensor.shape.isEmpty, tensor.shape.count <= 4, tensor.shape.allSatisfy({ $0 > 0 && $0 < 1 << 24 }) else {
                throw AdapterFileError.malformed(file: name, field: "tensor \(tensor.name)", reason: "has an impossible shape \(tensor.shape)")
            }
            guard seen.insert(tensor.name).inserted else {
                throw AdapterFileError.malformed(file: name, field: "tensor \(tensor.name)", reason: "appears twice")
            }
            guard let count = NamedTensors.elementCount(of: tensor.shape), count <= capacity - total else {
                throw AdapterFileError.malformed(file: name, field: "tensor \(tensor.name)",
                                              reason: "has shape \(tensor.shape), more values than the file holds")
            }
            total += count
            counts.append(count)
        }
        let expected = fixedHeaderSize + headerLength + total * 4 + trailerSize
        guard expected == data.count else {
            throw AdapterFileError.malformed(file: name, field: "tensors", reason: "leave \(data.count - expected) unexplained bytes")
        }
        let values: [[Float]] = data.withUnsafeBytes { raw in
            var offset = fixedHeaderSize + headerLength
            return counts.map { n in
                let source = UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + 4 * n)])
                offset += 4 * n
                return [Float](unsafeUninitializedCapacity: n) { buffer, initialized in
                    UnsafeMutableRawBufferPointer(buffer).copyMemory(from: source)
                    #if _endian(big)
                    for i in 0..<n { buffer[i] = Float(bitPattern: UInt32(littleEndian: buffer[i].bitPattern)) }
                    #endif
                    initialized = n
                }
            }
        }
        // A NaN or an infinity would turn every logit the adapter touches into NaN; an adapter is a few MB,
        // so one pass over its values is cheap next to the hash that was already taken.
        for (tensor, tensorValues) in zip(header.tensors, values) where !tensorValues.allSatisfy({ $0.isFinite }) {
            throw AdapterFileError.malformed(file: name, field: "tensor \(tensor.name)", reason: "holds a non-finite value")
        }
        let tensors = NamedTensors(names: header.tensors.map(\.name), shapes: header.tensors.map(\.shape), values: values)
        return AdapterFile(metadata: header.metadata, tensors: tensors)
    }

    private static func header(_ data: Data, headerLength: Int) -> Header? {
        let json = data.withUnsafeBytes { raw in
            Data(UnsafeRawBufferPointer(rebasing: raw[fixedHeaderSize..<(fixedHeaderSize + headerLength)]))
        }
        // `registry add` takes adapter files from anywhere: a header with a repeated key is refused like any
        // other JSON from a user's file (JSONDuplicateKeys).
        guard JSONDuplicateKeys.first(in: json) == nil else { return nil }
        return try? JSONDecoder().decode(Header.self, from: json)
    }

    /// The file size the header declares, when it parses; computed in Double so a corrupt shape cannot
    /// overflow an Int.
    private static func declaredSize(_ data: Data, headerLength: Int) -> Int? {
        guard let parsed = header(data, headerLength: headerLength) else { return nil }
        let scalars = parsed.tensors.reduce(0.0) { $0 + $1.shape.reduce(1.0) { $0 * Double(max($1, 0)) } }
        let size = Double(fixedHeaderSize + headerLength + trailerSize) + scalars * 4
        return size < Double(Int.max / 2) ? Int(size) : nil
    }
}
