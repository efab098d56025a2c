import AdaptCore
import Adapters
import Foundation
import Model
import TestSupport
import Testing
@testable import Training

/// `adapt train` as a real process: killed with SIGKILL part-way, resumed, and compared with an uninterrupted run.
@Suite(.serialized) struct TrainCommandTests {
    /// A tiny model and a small dataset in a fresh directory.
    static func fixture(weightType: GGMLType = .f32) throws -> (TemporaryDirectory, model: String, data: String) {
        let directory = TemporaryDirectory("adapt-train")
        let model = directory.file("tiny.gguf")
        var tiny = TinyModel(seed: 3)
        (tiny.weightType, tiny.embeddingType) = (weightType, weightType)
        try tiny.write(to: model)
        let pairs = [("hello there", "hello world, it is a fine day"), ("what is the time", "it is the time to rest"),
                     ("say hello", "hello hello hello"), ("tell me a fact", "the sea is wide and the world is old"),
                     ("and then", "then the rest of the story"), ("one two", "12 and 00 and 12"),
                     ("who are you", "a tiny test model, at your service"), ("end", "that is the end")]
        let lines = pairs.enumerated().map { i, pair in
            JSON.canonicalString(JSONValue.object(["prompt": .string(pair.0), "completion": .string(pair.1),
                                                    "weight": .double(i % 3 == 0 ? 2 : 1)]))
        }
        try Data(lines.joined(separator: "\n").utf8).write(to: directory.file("data.jsonl"))
        return (directory, model.path, directory.file("data.jsonl").path)
    }

    static func arguments(model: String, data: String, out: String) -> [String] {
        ["train", "--data", data, "--model", model, "--out", out, "--steps", "30", "--rank", "4", "--targets", "q,v,o,down",
         "--lr", "0.01", "--batch-size", "2", "--checkpoint-every", "4", "--seed", "9", "--threads", "1", "--json"]
    }

    struct Result: Decodable, Equatable {
        var adapter: String
        var digest: String
        var steps: Int
        var losses: [Double]
    }

    /// Runs `adapt` until it reports step `step` on stderr, then kills it with SIGKILL. Returns the step it
    /// resumed from (if it did), the first and last steps it reported, and whether the signal ended it.
    static func runAndKill(_ arguments: [String], atStep step: Int)
        throws -> (resumedFrom: Int?, firstStep: Int?, lastStep: Int, killed: Bool) {
        let process = Process()
        process.executableURL = Executables.url("adapt")
        process.arguments = arguments
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        var buffer = Data(), lastStep = 0
        var resumedFrom: Int?, firstStep: Int?
        reading: while true {
            let chunk = err.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
            while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = buffer[buffer.startIndex..<newline]
                buffer = Data(buffer[(newline + 1)...])
                guard let event = try? JSONDecoder().decode(JSONValue.self, from: Data(line)) else { continue }
                if event["event"] == .string("resumed") { resumedFrom = event["step"]?.intValue }
                guard event["event"] == .string("step"), let reported = event["step"]?.intValue else { continue }
                if firstStep == nil { firstStep = reported }
                lastStep = reported
                if reported >= step {
                    kill(process.processIdentifier, SIGKILL)
                    break reading
                }
            }
        }
        process.waitUntilExit()
        return (resumedFrom, firstStep, lastStep, process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL)
    }

    /// The f32 copy of the base, and the base kept quantized (Q4_1 blocks dequantized per product) at one and
    /// two threads, chosen and by default (`default`: no --base-weights).
    @Test(arguments: [("f32", 1), ("quantized", 1), ("quantized", 2), ("default", 1)])
    func aRunKilledAtSeveralStepsAndResumedEndsBitIdentical(base: String, threads: Int) throws {
        let (directory, model, data) = try Self.fixture(weightType: base == "f32" ? .f32 : .q4_1)
        func arguments(out: String) -> [String] {
            var list = Self.arguments(model: model, data: data, out: out) + (base == "default" ? [] : ["--base-weights", base])
            list[list.firstIndex(of: "--threads")! + 1] = "\(threads)"
            return list
        }
        let reference = try Executables.run("adapt", arguments(out: directory.file("ref.lora").path))
        #expect(reference.status == 0, "\(reference.stderr)")
        let expected = try JSON.decode(Result.self, from: reference.stdout, context: "adapt train --json")
        #expect(expected.steps == 30 && expected.losses.count == 30)

        let out = directory.file("run.lora").path
        let resumeArguments = arguments(out: out) + ["--resume"]
        var killedAt: [Int] = []
        for (i, step) in [6, 13, 22].enumerated() {
            let run = try Self.runAndKill(i == 0 ? arguments(out: out) : resumeArguments, atStep: step)
            #expect(run.killed, "the run should still have been training at step \(step)")
            if i > 0 {
                // It continued from the newest checkpoint the killed run before it had written (every 4 steps).
                let resumedFrom = try #require(run.resumedFrom)
                // (The step event comes before that step's checkpoint, so the kill may land before or after it.)
                let killed = killedAt.last!
                #expect(resumedFrom % 4 == 0 && resumedFrom >= (killed / 4 - 1) * 4 && resumedFrom <= killed + 1)
                #expect(run.firstStep == resumedFrom + 1)
            }
            killedAt.append(run.lastStep)
            let files = ((try? FileManager.default.contentsOfDirectory(atPath: out + ".checkpoints")) ?? []).filter { $0.hasSuffix(".ckpt") }
            #expect(files.count <= 2)
        }
        let resumed = try Executables.run("adapt", resumeArguments)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let result = try JSON.decode(Result.self, from: resumed.stdout, context: "adapt train --json")
        #expect(result.digest == expected.digest, "killed at steps \(killedAt)")
        let document = try JSON.decode(JSONValue.self, from: resumed.stdout, context: "adapt train --json")
        #expect(document["base_weights"] == .string(base == "default" ? "quantized" : base))
        // The quantized base's forward products run on the int8 kernels where this CPU has them.
        let int8 = ForwardProducts.int8.kernelName(storage: .quantized)
        #expect(document["forward_kernels"] == .string(base == "f32" ? "sgemm" : int8))
        #expect(result.losses.map(\.bitPattern) == expected.losses.map(\.bitPattern))
        #expect(resumed.stderr.contains("\"event\":\"resumed\""))
        let (adapter, digest) = try AdapterFile.read(from: URL(fileURLWithPath: out))
        #expect(digest.hex == expected.digest && adapter.metadata.rank == 4 && adapter.metadata.steps == 30)
    }

    @Test func anUnknownBaseWeightsStorageIsAUsageErrorNamingTheChoices() throws {
        let (directory, model, data) = try Self.fixture()
        let out = directory.file("b.lora").path
        let run = try Executables.run("adapt", Self.arguments(model: model, data: data, out: out) + ["--base-weights", "int8"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("--base-weights") && run.stderr.contains("must be quantized or f32"))
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    @Test func refusesToResumeWithAnotherRankNamingTheWayOut() throws {
        let (directory, model, data) = try Self.fixture()
        let out = directory.file("a.lora").path
        var arguments = Self.arguments(model: model, data: data, out: out)
        arguments[arguments.firstIndex(of: "30")!] = "4"
        let first = try Executables.run("adapt", arguments)
        #expect(first.status == 0)
        // The --json document has exactly the fields DESIGN.md lists.
        let document = try JSON.decode(JSONValue.self, from: first.stdout, context: "adapt train --json")
        #expect(document.objectValue.map { Set($0.keys) } == ["adapter", "digest", "steps", "losses", "tokens_per_second",
                                                                "base_weights", "forward_kernels", "activation_bytes"])
        // Running again without --resume would throw the checkpoints away: refused.
        let again = try Executables.run("adapt", arguments)
        #expect(again.status == 2 && again.stderr.contains("pass --resume to continue it"))
        var other = arguments + ["--resume"]
        other[other.firstIndex(of: "--rank")! + 1] = "8"
        let refused = try Executables.run("adapt", other)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("was written for rank 4, this run uses rank 8; pass --rank 4 or start fresh"))
        #expect(refused.stdout.isEmpty)
    }

    @Test func aResumedRunUsesTheRecordedThreadCount() throws {
        let (directory, model, data) = try Self.fixture()
        let out = directory.file("t.lora").path
        var arguments = Self.arguments(model: model, data: data, out: out)
        arguments[arguments.firstIndex(of: "30")!] = "4"
        arguments[arguments.firstIndex(of: "--threads")! + 1] = "2"
        let first = try Executables.run("adapt", arguments)
        #expect(first.status == 0, "\(first.stderr)")
        var withoutThreads = arguments + ["--resume"]
        withoutThreads.removeSubrange(withoutThreads.firstIndex(of: "--threads")!...(withoutThreads.firstIndex(of: "--threads")! + 1))
        let resumed = try Executables.run("adapt", withoutThreads)
        // Nothing was left to compute: this process's speed and activation bytes are 0.
        let expectedOutput = first.stdout
            .replacingOccurrences(of: #""tokens_per_second" : [0-9.e+-]+"#, with: "\"tokens_per_second\" : 0", options: .regularExpression)
            .replacingOccurrences(of: #""activation_bytes" : [0-9]+"#, with: "\"activation_bytes\" : 0", options: .regularExpression)
        #expect(resumed.status == 0 && resumed.stdout == expectedOutput)
        var otherThreads = arguments + ["--resume"]
        otherThreads[otherThreads.firstIndex(of: "--threads")! + 1] = "1"
        let refused = try Executables.run("adapt", otherThreads)
        #expect(refused.status == 1 && refused.stderr.contains("was written for threads 2, this run uses threads 1; pass --threads 2 or start fresh"))
    }

    @Test func aResumedRunKeepsTheCheckpointsBaseWeightsAndRefusesAnotherNamingTheWayOut() throws {
        let (directory, model, data) = try Self.fixture(weightType: .q4_1)
        let out = directory.file("w.lora").path
        var arguments = Self.arguments(model: model, data: data, out: out)
        arguments[arguments.firstIndex(of: "30")!] = "4"
        let first = try Executables.run("adapt", arguments + ["--base-weights", "f32"])
        #expect(first.status == 0, "\(first.stderr)")
        let firstDocument = try JSON.decode(JSONValue.self, from: first.stdout, context: "adapt train --json")
        #expect(firstDocument["base_weights"] == .string("f32"))
        // Without --base-weights the resumed run computes as the checkpoint did, not with the default.
        let resumed = try Executables.run("adapt", arguments + ["--resume"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let resumedDocument = try JSON.decode(JSONValue.self, from: resumed.stdout, context: "adapt train --json")
        #expect(resumedDocument["base_weights"] == .string("f32"))
        #expect(resumedDocument["digest"] == firstDocument["digest"])
        // Asked for the other storage, it refuses rather than mix two arithmetics in one adapter.
        let refused = try Executables.run("adapt", arguments + ["--resume", "--base-weights", "quantized"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("was written for base weights f32, this run uses base weights quantized; "
                                        + "pass --base-weights f32 to resume it, or start fresh"), "\(refused.stderr)")
        #expect(refused.stdout.isEmpty)
        let (_, digest) = try AdapterFile.read(from: URL(fileURLWithPath: out))
        #expect(.string(digest.hex) == firstDocument["digest"])
    }

    @Test func aResumedRunKeepsTheCheckpointsForwardProductsAndRefusesOthersNamingTheWayOut() throws {
        let (directory, model, data) = try Self.fixture(weightType: .q4_1)
        let out = directory.file("w.lora").path
        var arguments = Self.arguments(model: model, data: data, out: out)
        arguments[arguments.firstIndex(of: "30")!] = "4"
        let first = try Executables.run("adapt", arguments + ["--forward-products", "sgemm"])
        #expect(first.status == 0, "\(first.stderr)")
        let firstDocument = try JSON.decode(JSONValue.self, from: first.stdout, context: "adapt train --json")
        #expect(firstDocument["forward_kernels"] == .string("sgemm"))
        let resumed = try Executables.run("adapt", arguments + ["--resume"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let resumedDocument = try JSON.decode(JSONValue.self, from: resumed.stdout, context: "adapt train --json")
        #expect(resumedDocument["forward_kernels"] == .string("sgemm"))
        #expect(resumedDocument["digest"] == firstDocument["digest"])
        guard ForwardProducts.int8.kernelName(storage: .quantized) != "sgemm" else { return }   // one arithmetic only on this CPU
        let refused = try Executables.run("adapt", arguments + ["--resume", "--forward-products", "int8"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("was written for forward products sgemm, this run uses forward products int8-v1; "
                                        + "pass --forward-products sgemm to resume it, or start fresh"), "\(refused.stderr)")
        #expect(refused.stdout.isEmpty)
    }

    @Test func fallsBackPastACorruptCheckpointAndSaysSo() throws {
        let (directory, model, data) = try Self.fixture()
        let out = directory.file("c.lora").path
        let arguments = Self.arguments(model: model, data: data, out: out)
        let full = try Executables.run("adapt", arguments)
        let expected = try JSON.decode(Result.self, from: full.stdout, context: "adapt train --json")
        let newest = URL(fileURLWithPath: out + ".checkpoints/step-00000030.ckpt")
        var bytes = try Data(contentsOf: newest)
        bytes[bytes.count - 10] ^= 0xFF
        try bytes.write(to: newest)
        let resumed = try Executables.run("adapt", arguments + ["--resume"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stderr.contains("skipped checkpoint step-00000030.ckpt"))
        let result = try JSON.decode(Result.self, from: resumed.stdout, context: "adapt train --json")
        #expect(result.digest == expected.digest && result.losses == expected.losses)
    }
}
