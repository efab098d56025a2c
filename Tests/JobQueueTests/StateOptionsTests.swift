import Foundation
import Testing
import TestSupport

/// `adapt` and the worker executables read `--state`/`ADAPT_STATE` and `--durability`/`ADAPT_DURABILITY`
/// by the same code: the same refusals, the same exit code (2), the same message, and nothing created.
@Suite struct StateOptionsTests {
    let directory = TemporaryDirectory("adapt-state-options")

    static let executables: [(String, [String])] = [
        ("adapt", ["enqueue", "noop"]), ("adapt-prune-worker", ["--exit-when-idle"]), ("adapt-train-worker", ["--exit-when-idle"]),
    ]

    @Test(arguments: [
        (["--state", ""], [String: String](), "--state needs a directory, got an empty path"),
        (["--durability", "fast"], [:], "--durability: unknown durability 'fast'; use full or normal"),
        ([], ["ADAPT_DURABILITY": "fast"], "ADAPT_DURABILITY: unknown durability 'fast'; use full or normal"),
    ])
    func theCommandLineAndTheWorkersRefuseTheSameStateOptions(options: [String], environment: [String: String],
                                                               message: String) throws {
        let state = directory.file("state").path
        for (name, arguments) in Self.executables {
            let given = options.first == "--state" ? options : ["--state", state] + options
            let result = try Executables.run(name, given + arguments, environment: environment)
            #expect(result.status == 2, "\(name): \(result.stderr)")
            #expect(result.stderr.contains(message), "\(name): \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: state))
    }

    @Test func aWorkerUsesTheStateTheEnvironmentNames() throws {
        let state = directory.file("from-env").path
        // A directory that exists (a step worker refuses one that does not: a mistyped path).
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let result = try Executables.run("adapt-prune-worker", ["--exit-when-idle"],
                                         environment: ["ADAPT_STATE": state, "ADAPT_DURABILITY": "normal"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(FileManager.default.fileExists(atPath: state + "/adapt.sqlite"))
    }
}
