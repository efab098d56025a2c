import AdaptCore
import Foundation
import TestSupport
import Testing
@testable import Training

@Suite struct AdapterFileTests {
    func adapter(_ tensors: NamedTensors) -> AdapterFile {
        let configuration = TrainingConfiguration(steps: 30)
        let metadata = AdapterFileMetadata(baseModelDigest: baseDigest, chatConvention: "chatml", templateDigest: Digest.sha256("template"),
                                       targets: ["q", "v"], rank: 3, alpha: 6, steps: 30, trainingExamples: 10,
                                       heldOutExamples: 2, truncatedExamples: 0, trainingTokens: 1440,
                                       metrics: ["final_loss": 0.25], trainingConfiguration: configuration.numericSettings,
                                       trainingConfigurationDigest: configuration.digest)
        return AdapterFile(metadata: metadata, tensors: tensors)
    }

    @Test func roundTripsTensorsAndMetadata() throws {
        let file = adapter(BigramLoRA().initialParameters())
        let (data, digest) = file.encoded()
        let (decoded, decodedDigest) = try AdapterFile.decode(data, name: "a")
        #expect(decoded.tensors.bitwiseEqual(file.tensors) && decoded.metadata == file.metadata)
        #expect(decodedDigest == digest)
        #expect(Digest.sha256(data) == digest)   // the name the blob store gives it
        #expect(Data(data.suffix(32)) == Data(hexBytes: Digest.sha256(data.prefix(data.count - 32)).hex))
    }

    @Test func equalWeightsGiveEqualDigestsAndAnyChangeAnother() {
        let tensors = BigramLoRA().initialParameters()
        #expect(adapter(tensors).encoded().digest == adapter(tensors).encoded().digest)
        var changed = tensors
        changed.values[0][0] = changed.values[0][0].nextUp
        #expect(adapter(changed).encoded().digest != adapter(tensors).encoded().digest)
        var otherConfig = adapter(tensors)
        otherConfig.metadata.trainingConfigurationDigest = Digest.sha256("x")
        #expect(otherConfig.encoded().digest != adapter(tensors).encoded().digest)
    }

    @Test func corruptAndTruncatedFilesAreTypedErrors() throws {
        let data = adapter(BigramLoRA().initialParameters()).encoded().data
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
        let digest = try adapter(BigramLoRA().initialParameters()).write(to: url)
        #expect(try AdapterFile.read(from: url).digest == digest)
    }
}
