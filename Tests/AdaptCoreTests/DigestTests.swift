import AdaptCore
import Foundation
import Testing
import TestSupport

@Test func sha256MatchesTheKnownAnswerForAbc() {
    #expect(Digest.sha256("abc").hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    #expect(Digest.sha256(Data()).hex == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
}

@Test func fileDigestEqualsInMemoryDigest() throws {
    let dir = TemporaryDirectory()
    let bytes = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
    try AtomicFile.write(bytes, to: dir.file("big"))
    #expect(try Digest.sha256(fileAt: dir.file("big")) == Digest.sha256(bytes))
}

@Test func digestRejectsTextThatIsNotHex() {
    #expect(Digest(hex: "xyz") == nil)
    #expect(Digest(hex: String(repeating: "g", count: 64)) == nil)
    #expect(Digest(hex: String(repeating: "A", count: 64))?.hex == String(repeating: "a", count: 64))
}

@Test func blobStoreVerifiesContentOnRead() throws {
    let dir = TemporaryDirectory()
    let store = BlobStore(root: dir.file("blobs"))
    let digest = try store.put(Data("hello".utf8))
    #expect(try store.get(digest) == Data("hello".utf8))
    try Data("hellp".utf8).write(to: store.url(for: digest))
    #expect(throws: CoreError.self) { try store.get(digest) }
    let missing = Digest.sha256("absent")
    #expect(throws: CoreError.blobMissing(missing)) { try store.get(missing) }
}

@Test func canonicalJSONSortsKeys() {
    let value = JSONValue.object(["b": .int(1), "a": .array([.double(0.5), .null, .string("x")])])
    #expect(value.description == #"{"a":[0.5,null,"x"],"b":1}"#)
}

@Test func forkedHasherGivesThePrefixAndTheWholeDigestInOnePass() {
    let prefix = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
    let suffix = Data("the rest".utf8)
    var hasher = SHA256()
    hasher.update(prefix)
    var whole = hasher.fork()
    whole.update(suffix)
    #expect(hasher.finalize() == Digest.sha256(prefix))
    #expect(whole.finalize() == Digest.sha256(prefix + suffix))
    let digest = Digest.sha256("abc")
    #expect(Digest.hex(digest.bytes) == digest.hex && digest.bytes.count == 32)
}

@Test func wholeFileReadReturnsTheBytesOrNilWhenAbsent() throws {
    let dir = TemporaryDirectory()
    let bytes = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
    try AtomicFile.write(bytes, to: dir.file("big"))
    #expect(try AtomicFile.read(dir.file("big")) == bytes)
    #expect(try AtomicFile.read(dir.file("absent")) == nil)
    let store = BlobStore(root: dir.file("blobs"))
    let digest = try store.put(bytes)
    #expect(try store.getUnverified(digest) == bytes)
    #expect(throws: CoreError.blobMissing(Digest.sha256("absent"))) { try store.getUnverified(Digest.sha256("absent")) }
}

/// A corrupt file whose hash agrees with the stated one in its first 12 characters must not print two equal
/// prefixes, which reads as "the hashes match".
@Test func digestsInAMessageAreCutWhereTheyDiffer() {
    let stated = "0123456789abcdef0123"
    let content = "0123456789abcdeX0123"
    #expect(distinguishingPrefixes(content, stated) == ("0123456789abcdeX", "0123456789abcdef"))
    #expect(distinguishingPrefixes("aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb") == ("aaaaaaaaaaaa", "bbbbbbbbbbbb"))
}
