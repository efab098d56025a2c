import AdaptCore
import Foundation
import TestSupport
import Testing
@testable import Training

@Suite struct AdapterFileTests {
    func adapter(_ tensors: NamedTensors) -> AdapterFile {
        let configuration = TrainingConfiguration(steps: 30)
        let metadata = AdapterMetadata(baseModelDigest: baseDigest, chatConvention: "chatml", templateDigest: Digest.sha256("template"),
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
        #expect(Digest.sha256(data.prefix(data.count - 32)) == digest)
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

@Suite struct ProgressPrinterTests {
    let progress = StepProgress(step: 12, totalSteps: 100, loss: 2.31412, smoothedLoss: 2.4, learningRate: 1e-4,
                                gradientNorm: 0.5, tokensPerSecond: 1534.4, elapsedSeconds: 12, etaSeconds: 88)

    @Test func rewritesOneLiveLineOnATerminal() {
        let out = LockedBox("")
        let printer = ProgressPrinter(style: .liveLine) { text in out.update { $0 += text } }
        printer(.step(progress))
        printer(.checkpointWritten(step: 12, name: "step-00000012.ckpt", bytes: 13_800_000, seconds: 0.214))
        printer.finish()
        #expect(out.get() == "\rstep 12/100  loss 2.3141  avg 2.4000  lr 1.0e-04  1534 tok/s  0:12 elapsed  1:28 left\u{1B}[K\n"
            + "checkpoint at step 12: step-00000012.ckpt (13.8 MB in 0.21 s)\n")
    }

    @Test func writesOneJSONObjectPerLineOtherwise() throws {
        let out = LockedBox("")
        let printer = ProgressPrinter(style: .jsonLines) { text in out.update { $0 += text } }
        printer(.step(progress))
        printer(.stoppedEarly(step: 40, bestStep: 30, bestLoss: 1.5))
        let lines = out.get().split(separator: "\n")
        #expect(lines.count == 2)
        let first = try JSON.decode(JSONValue.self, from: String(lines[0]), context: "line")
        #expect(first["event"] == .string("step") && first["step"] == .int(12) && first["eta_seconds"]?.doubleValue == 88)
        let second = try JSON.decode(JSONValue.self, from: String(lines[1]), context: "line")
        #expect(second["best_step"] == .int(30))
    }
}
