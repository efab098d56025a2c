import AdaptCore
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Steps
import Testing
import TestSupport
import Training

/// Run bundles made to hurt the machine that replays them: a zstd bomb is refused quickly within bounded memory,
/// and a name inside a bundle is only ever a name, never a path that makes replay read (and hash) another file.
@Suite struct HostileBundleTests {
    let directory = TemporaryDirectory("hostile-bundle")

    /// A bundle document with no steps: enough for `replay --bundle` to reach the base model.
    func document(baseModel: String = "tiny.gguf", steps: [JSONValue] = [], blobs: [String: JSONValue] = [:]) -> JSONValue {
        .object([
            "version": .int(RunBundle.formatVersion), "include_user_data": .bool(false), "run_id": .string("run-1"),
            "run_name": .string("nightly"), "manifest": .object(["lineage": .string("logbook")]), "steps": .array(steps),
            "base_model": .object(["name": .string(baseModel), "digest": .string(Digest.sha256(Data("a model".utf8)).hex)]),
            "blobs": .object(blobs),
        ])
    }

    func bundle(_ document: JSONValue) throws -> Data { RunBundle.magic + (try Zstd.compress(JSON.canonical(document))) }

    func step(name: String = "sample", lineage: String = "logbook") -> JSONValue {
        .object(["id": .int(1), "name": .string(name), "kind": .string("sample"), "input": .object(["lineage": .string(lineage)]),
                 "output": .object([:]), "ancestors": .object([:])])
    }

    func write(_ data: Data) throws -> String {
        let url = directory.file("hostile.bundle")
        try data.write(to: url)
        return url.path
    }

    @Test(arguments: [true, false])
    func aBundleThatIsADecompressionBombIsRefusedQuicklyWithinBoundedMemory(declaringItsSize: Bool) throws {
        // 60 KB that decode to 1.9 GB; the header says so, or says nothing.
        let blocks = 15_000
        let path = try write(RunBundle.magic + ZstdBomb.frame(blocks: blocks, declared: declaringItsSize ? ZstdBomb.output(blocks: blocks) : nil))
        let run = try PeakMemoryRun.run("adapt", ["--state", directory.state.root.path, "replay", "--bundle", path],
                                        environment: ["TMPDIR": directory.path])
        #expect(run.status == 2, "exit \(run.status): \(run.stderr)")
        #expect(run.stderr.contains("as a decompression bomb would") && run.stderr.contains("hostile.bundle"), "\(run.stderr)")
        #expect(run.peakBytes < 300 << 20, "peak resident size \(run.peakBytes) bytes")
        #expect(run.seconds < 20, "took \(run.seconds) s")
    }

    @Test func aFileLargerThanAnyBundleIsRefusedWithoutBeingRead() throws {
        // A sparse file: it takes no disk, but reading it would take its whole size in memory.
        let path = directory.file("huge.bundle").path
        #expect(FileManager.default.createFile(atPath: path, contents: RunBundle.magic))
        #expect(truncate(path, off_t(RunBundle.largestFile + 1)) == 0)
        let run = try PeakMemoryRun.run("adapt", ["--state", directory.state.root.path, "replay", "--bundle", path],
                                        environment: ["TMPDIR": directory.path])
        #expect(run.status == 2, "exit \(run.status): \(run.stderr)")
        #expect(run.stderr.contains("is refused unread") && run.stderr.contains("huge.bundle"), "\(run.stderr)")
        #expect(run.peakBytes < 128 << 20, "peak resident size \(run.peakBytes) bytes")
    }

    @Test func theLimitRefusesABombOfABundlesSizeAndKeepsEveryCommittedBundle() throws {
        let bundles = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("pipelines/examples/logbook/bundles")
        let names = try FileManager.default.contentsOfDirectory(atPath: bundles.path).filter { $0.hasSuffix(".bundle") }
        #expect(!names.isEmpty)
        for name in names {
            let data = try Data(contentsOf: bundles.appendingPathComponent(name))
            #expect(try RunBundle.decode(data, path: name).baseModel.name == "SmolLM2-135M-Instruct.Q4_1.gguf")
            // A bomb no larger than this real bundle, declaring 2 GiB: refused from its header alone.
            let bomb = RunBundle.magic + ZstdBomb.frame(blocks: (data.count - 30) / 4, declared: 1 << 31)
            #expect(bomb.count <= data.count)
            let compressed = bomb.count - RunBundle.magic.count
            // The limit grows with the frame (a warm night's bundle carries its parent's adapter), up to the largest document.
            let limit = min(RunBundle.largestDocument, Zstd.largestPlausibleSize(compressedBytes: compressed))
            #expect(limit < 1 << 31)
            #expect(throws: RunBundleError.tooLarge(path: name, compressedBytes: compressed, limit: limit, declared: 1 << 31)) {
                try RunBundle.decode(bomb, path: name)
            }
        }
    }

    @Test(arguments: ["../../outside.gguf", "/etc/passwd", "..", ".", ".hidden.gguf", "", "models/tiny.gguf", "tiny\u{0}.gguf",
                      "tiny\n.gguf", "tiny\u{1B}[2J.gguf"])
    func aBaseModelNameThatIsNotAPlainFileNameIsRefusedAndNothingOutsideIsRead(name: String) throws {
        // A readable file outside the models directory, where '../../outside.gguf' leads from it.
        let outside = directory.file("outside.gguf")
        try Data("any readable file".utf8).write(to: outside)
        let secretDigest = Digest.sha256(Data("any readable file".utf8)).hex
        let path = try write(try bundle(document(baseModel: name)))
        for json in [false, true] {
            let result = try Executables.run("adapt", ["--state", directory.state.root.path, "replay", "--bundle", path] + (json ? ["--json"] : []),
                                             environment: ["TMPDIR": directory.path])
            #expect(result.status == 2, "exit \(result.status): \(result.stderr)")
            #expect(result.stderr.contains("base_model.name") && result.stderr.contains("never a path"), "\(result.stderr)")
            #expect(!result.stdout.contains(secretDigest) && !result.stderr.contains(secretDigest))
        }
    }

    @Test func aStepNameOrLineageThatIsNotAPlainNameIsRefused() throws {
        for (document, field) in [(document(steps: [step(name: "../train")]), "steps[].name"),
                                  (document(steps: [step(lineage: "../../mail")]), "steps[].input.lineage")] {
            let data = try bundle(document)
            let error = #expect(throws: RunBundleError.self) { try RunBundle.decode(data, path: "b") }
            guard case let .unsafeName(_, refused, _)? = error else { Issue.record("refused as \(String(describing: error))"); continue }
            #expect(refused == field)
        }
    }

    @Test(arguments: ["../../blobs/ab", "AB" + String(repeating: "0", count: 62), "abc"])
    func aBlobKeyThatIsNotALowercaseSHA256IsRefused(key: String) throws {
        let data = try bundle(document(blobs: [key: .string("")]))
        #expect(throws: RunBundleError.unsafeName(path: "b", field: "blobs", problem: "has a key that is not a SHA-256 in lowercase hex")) {
            try RunBundle.decode(data, path: "b")
        }
    }
}
