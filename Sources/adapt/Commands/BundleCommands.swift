import AdaptCore
import CommandLineKit
import Foundation
import Services
#if canImport(Glibc)
import Glibc
#endif

/// `adapt run export` and `adapt replay --bundle`: a recorded run carried to a machine with no state
/// directory (a CI job) and replayed there.
enum BundleCommands {
    static let all: [Command] = [export]

    static let export = Command(
        "run export", summary: "write a recorded run to one file that 'adapt replay --bundle' checks on any machine",
        discussion: """
            The bundle holds the run's manifest (resolved pipeline, seed, what its arithmetic depends on, every
            step's digests), each succeeded step's recorded input and output, the input blobs the steps read
            (buffer snapshot, incumbent and active adapters) and the base model's name and SHA-256, never the
            model. A run whose buffer snapshot holds examples (user text) is refused unless --include-user-data
            is given; the bundle records that flag and every command that reads it shows it. --json prints
            {run_id, out, bytes, blobs, steps, include_user_data, base_model: {name, digest}}. With --database
            postgres://… (or ADAPT_DATABASE) the run and its blobs are read from that database.
            """,
        options: [
            OptionSpec("out", value: "FILE", help: "the bundle file to write (mode 0600)"),
            .flag("include-user-data", help: "allow the lineage's (scrubbed) examples into the bundle"),
            .json,
        ],
        positionals: [PositionalSpec("RUN", help: "run id (run-N or N)")]
    ) { invocation in
        let a = invocation.arguments
        let text = try a.required("RUN")
        guard let runID = RunID.parse(text) else { throw UsageError("RUN must look like run-N or N, got '\(text)'") }
        let out = URL(fileURLWithPath: try a.required("out"))
        try OutputPath.check(out, option: "out", kind: .runBundle, state: try GlobalOptions.hostState(invocation), inputs: [])
        let (bundle, bytes) = try RunBundles.export(runID, from: try GlobalOptions.recordedRuns(invocation),
                                                    includeUserData: a.flag("include-user-data"), to: out)
        if a.flag("json") {
            Console.print(JSON.pretty(JSONValue.object([
                "run_id": .string(bundle.runID), "out": .string(out.path), "bytes": .int(bytes),
                "blobs": .int(bundle.blobs.count), "steps": .int(bundle.steps.count),
                "include_user_data": .bool(bundle.includeUserData),
                "base_model": .object(["name": .string(bundle.baseModel.name), "digest": .string(bundle.baseModel.digest.hex)]),
            ])))
        } else {
            Console.print(TerminalText.escaped("\(bundle.runID): \(bundle.steps.count) steps, \(bundle.blobs.count) blobs, "
                                               + "\(bytes) bytes → \(out.path)"
                                               + (bundle.includeUserData ? " (holds user data: --include-user-data)" : "")))
        }
    }

    /// `adapt replay --bundle FILE`: replays in a private scratch directory (under the system temporary
    /// directory unless --scratch names one), removed afterwards; nothing else is written. Exit 1 on a
    /// difference (with --check), 2 when the bundle cannot be replayed (damaged, altered blob, missing model
    /// or another model's digest).
    static func replayBundle(_ invocation: Invocation, path: String) throws {
        let a = invocation.arguments
        let json = a.flag("json")
        func cannotReplay(_ error: any Error & CustomStringConvertible, includeUserData: Bool?) throws -> Never {
            if json {
                let fields: [String: JSONValue] = [
                    "bundle": .string(path), "equal": .bool(false), "first_difference": .null, "replayable": .bool(false),
                    "include_user_data": includeUserData.map(JSONValue.bool) ?? .null, "error": .string(error.description),
                ]
                if let error = error as? StepError, case let .arithmeticDiffers(run, difference) = error {
                    Console.print(JSON.pretty(try Nightly.arithmeticDocument(error, difference, fields: fields.merging(["run_id": .string(run)]) { a, _ in a })))
                } else {
                    Console.print(JSON.pretty(JSONValue.object(fields)))
                }
            }
            Console.error("adapt: error: \(error.description)")
            throw ExitCode(2)
        }
        if let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int {
            do { try RunBundle.checkFileSize(size, path: path) } catch let error as RunBundleError { try cannotReplay(error, includeUserData: nil) }
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("--bundle: cannot read \(path); pass a file 'adapt run export' wrote")
        }
        let bundle: RunBundle
        do { bundle = try RunBundles.decode(data, path: path) } catch let error as RunBundleError { try cannotReplay(error, includeUserData: nil) }
        // Recorded with other kernels this CPU runs: computed with them, the bits can match.
        if let coreType = RunBundles.coreTypeToPin(bundle) {
            Console.error("replay: executing again with OpenBLAS core type \(TerminalText.escaped(coreType)), the one the run was recorded with")
            RunBundles.executeAgain(pinning: coreType)
        }
        if bundle.includeUserData { Console.error("adapt: this bundle holds user data (exported with --include-user-data)") }
        let model = URL(fileURLWithPath: a.string("model")
                        ?? StateDirectory.resolve(option: invocation.global.string("state")).models.appendingPathComponent(bundle.baseModel.name).path)
        let scratchURL: URL
        let temporary = a.string("scratch") == nil
        if let scratch = a.string("scratch") {
            scratchURL = URL(fileURLWithPath: scratch)
            // The replay writes a state's worth of files there: never into the state's own, through a link, or over
            // the bundle or model it reads.
            try OutputPath.checkDirectory(scratchURL, option: "scratch", files: [], state: try GlobalOptions.hostState(invocation),
                                          inputs: [("bundle", URL(fileURLWithPath: path)), ("model", model)])
            if let contents = try? FileManager.default.contentsOfDirectory(atPath: scratch), !contents.isEmpty {
                throw UsageError("--scratch \(scratch) is not empty; replay needs an empty directory")
            }
        } else {
            scratchURL = try RunBundles.scratch(under: FileManager.default.temporaryDirectory.appendingPathComponent("adapt-replay-\(getuid())"))
        }
        defer {
            if temporary {
                try? FileManager.default.removeItem(at: scratchURL)
                // The per-user parent goes too unless another replay is using it (rmdir removes only an empty one).
                rmdir(scratchURL.deletingLastPathComponent().path)
            }
        }
        let report: RunBundles.Report
        do {
            report = try RunBundles.replay(bundle, model: model, scratch: StateDirectory(root: scratchURL),
                                           comparison: try a[NightlyCommands.Replay.tolerance].map { .tolerance($0) } ?? .bits,
                                       log: { Console.error("replay: " + TerminalText.escaped($0)) })
        } catch let error as RunBundleError {
            try cannotReplay(error, includeUserData: bundle.includeUserData)
        } catch let error as StepError {
            guard case .arithmeticDiffers = error else { throw error }
            try cannotReplay(error, includeUserData: bundle.includeUserData)
        }
        if json {
            var document = try JSON.decode(JSONValue.self, from: JSON.canonical(report), context: "replay report").objectValue ?? [:]
            document["bundle"] = .string(path)
            document["include_user_data"] = .bool(bundle.includeUserData)
            document["base_model"] = .object(["name": .string(bundle.baseModel.name), "digest": .string(bundle.baseModel.digest.hex)])
            Console.print(JSON.pretty(JSONValue.object(document)))
        } else if let d = report.firstDifference {
            Console.print(TerminalText.escaped("\(report.runID) (bundle): differs at \(d.step).\(d.field): "
                                               + "\(JSON.canonicalString(d.expected)) → \(JSON.canonicalString(d.actual))"))
        } else {
            Console.print("\(report.runID) (bundle): \(report.equalSentence)")
        }
        if a.flag("check") && !report.equal { throw ExitCode(1) }
    }
}
