import AdaptCore
import TestSupport
import Testing
@testable import Training

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
