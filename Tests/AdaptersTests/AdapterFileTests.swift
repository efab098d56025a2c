import AdaptCore
import Adapters
import Foundation
import TestSupport
import Testing

@Suite struct AdapterFileTests {
    @Test func roundTripsTensorsAndMetadata() throws {
        let file = sampleAdapter()
        let (data, digest) = file.encoded()
        let (decoded, decodedDigest) = try AdapterFile.decode(data, name: "a")
        #expect(decoded.tensors.bitwiseEqual(file.tensors) && decoded.metadata == file.metadata)
        #expect(decodedDigest == digest)
        #expect(Digest.sha256(data) == digest)   // the name the blob store gives it
        #expect(Data(data.suffix(32)) == Data(Digest.sha256(data.prefix(data.count - 32)).bytes))
    }

    @Test func equalWeightsGiveEqualDigestsAndAnyChangeAnother() {
        let tensors = sampleTensors()
        #expect(sampleAdapter(tensors).encoded().digest == sampleAdapter(tensors).encoded().digest)
        var changed = tensors
        changed.values[0][0] = changed.values[0][0].nextUp
        #expect(sampleAdapter(changed).encoded().digest != sampleAdapter(tensors).encoded().digest)
        var otherConfig = sampleAdapter(tensors)
        otherConfig.metadata.trainingConfigurationDigest = Digest.sha256("x")
        #expect(otherConfig.encoded().digest != sampleAdapter(tensors).encoded().digest)
    }

    @Test func corruptAndTruncatedFilesAreTypedErrors() throws {
        let data = sampleAdapter().encoded().data
        var flipped = data
        flipped[data.count - 60] ^= 0x01
        guard case .digestMismatch = try #require(thrown { try AdapterFile.decode(flipped, name: "a") }) else {
            Issue.record("a flipped byte must be a digest mismatch"); return
        }
        guard case .truncated = try #require(thrown { try AdapterFile.decode(data.prefix(data.count - 7), name: "a") }) else {
            Issue.record("a cut file must be reported as truncated"); return
        }
        guard case .notThisFormat = try #require(thrown { try AdapterFile.decode(Data(repeating: 0, count: 64), name: "a") }) else {
            Issue.record("zeros are not an adapter"); return
        }
    }

    @Test func writesAtomicallyAndReadsBack() throws {
        let directory = TemporaryDirectory()
        let url = directory.file("out/adapter.lora")
        let digest = try sampleAdapter().write(to: url)
        #expect(try AdapterFile.read(from: url).digest == digest)
    }

    /// A rank-1 adapter on `q` that `adapt train` wrote before the format moved into its own module: it still
    /// reads, and written again it gives the same bytes, so files and digests from before stay valid.
    @Test func readsAFileWrittenEarlierAndWritesItBackByteForByte() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/rank1-q.lora")
        let data = try Data(contentsOf: url)
        let (file, digest) = try AdapterFile.decode(data, name: "rank1-q.lora")
        #expect(digest.hex == "1d032dd9ada83c8cee6abd8676959c68bd9531059695da51349fc8a8a35e3c70")
        #expect(file.metadata.settings == AdapterSettings(rank: 1, alpha: file.metadata.alpha, dropout: 0, targets: ["q"]))
        let (written, writtenDigest) = file.encoded()
        #expect(written == data)
        #expect(writtenDigest == digest)
    }
}
