import AdaptCore
import CommandLineKit
import Foundation
import Services

/// `adapt pipeline check FILE` and `adapt pipeline show [FILE]`.
enum PipelineCommands {
    static let all: [Command] = [check, show]

    static let check = Command(
        "pipeline check", summary: "validate a pipeline file and list every problem in it",
        discussion: "Exit status 0 when the file is a valid pipeline, 1 when it is not (every problem is listed, "
            + "each named by its JSON path), 2 for a usage error. FILE may be - for standard input.",
        options: [.json],
        positionals: [PositionalSpec("FILE", help: "the pipeline file (JSON)")]
    ) { invocation in
        let path = try invocation.arguments.required("FILE")
        let asJSON = invocation.arguments.flag("json")
        let data = try PipelineFiles.read(path)
        let source = PipelineFiles.source(path)
        var problems: [PipelineProblem] = []
        var pipeline: Pipeline?
        switch try PipelineFiles.check(data, source: source) {
        case let .success(valid): pipeline = valid
        case let .failure(failure): problems = failure.problems
        }
        if asJSON {
            Console.print(JSON.pretty(CheckReport(file: path, valid: pipeline != nil, name: pipeline?.name,
                                                  digest: pipeline?.digest.hex, problems: problems)))
        } else if let pipeline {
            let graph = pipeline.steps.map(\.name).joined(separator: ", ")
            // The name, step names and file name come from the user's file: escaped like any stored text.
            Console.print(TerminalText.escaped("\(source): valid pipeline '\(pipeline.name)' (\(pipeline.steps.count) steps: \(graph)), "
                                               + "digest \(pipeline.digest.short)"))
        } else {
            let count = problems.count == 1 ? "1 problem" : "\(problems.count) problems"
            Console.error(TerminalText.escaped("\(source) is not a valid pipeline (\(count)):"))
            for problem in problems { Console.error(TerminalText.escaped("  - \(problem.message)")) }
        }
        if pipeline == nil { throw ExitCode.failure }
    }

    static let show = Command(
        "pipeline show", summary: "print a pipeline with every default filled in (the built-in nightly one without FILE)",
        discussion: "The output is itself a valid pipeline file; its canonical form is what a run's manifest digests.",
        options: [.json],
        positionals: [PositionalSpec("FILE", optional: true, help: "a pipeline file (default: the built-in nightly pipeline)")]
    ) { invocation in
        let pipeline = try load(invocation.arguments.string("FILE"))
        Console.print(JSON.pretty(pipeline))
        if !invocation.arguments.flag("json") {
            Console.error("digest \(pipeline.digest.hex)")
        }
    }

    /// The pipeline a command runs with: FILE when given, the built-in nightly pipeline otherwise.
    static func load(_ path: String?) throws -> Pipeline {
        try PipelineFiles.load(path)
    }

    struct CheckReport: Encodable {
        let file: String
        let valid: Bool
        let name: String?
        let digest: String?
        let problems: [PipelineProblem]

        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(file, forKey: .file)
            try c.encode(valid, forKey: .valid)
            if let name { try c.encode(name, forKey: .name) } else { try c.encodeNil(forKey: .name) }
            if let digest { try c.encode(digest, forKey: .digest) } else { try c.encodeNil(forKey: .digest) }
            try c.encode(problems, forKey: .problems)
        }

        enum Keys: String, CodingKey { case file, valid, name, digest, problems }
    }
}
