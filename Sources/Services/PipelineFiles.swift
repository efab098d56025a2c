import AdaptCore
import Foundation
import Pipelines

/// Reading pipeline files for `pipeline check|show`, `device`, `enqueue nightly` and `schedule install`.
public enum PipelineFiles {
    /// A pipeline file's bytes ("-" reads standard input).
    public static func read(_ path: String) throws -> Data {
        if path == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw PipelineError.unreadable(path: path, reason: UnreadablePath.reason(path))
        }
        return data
    }

    /// The name a pipeline read from `path` is reported under.
    public static func source(_ path: String) -> String {
        path == "-" ? "standard input" : URL(fileURLWithPath: path).lastPathComponent
    }

    /// The pipeline in `data`, or every problem found in it (each named by its JSON path).
    public static func check(_ data: Data, source: String) throws -> Result<Pipeline, PipelineCheckFailure> {
        do {
            return .success(try Pipeline.parse(data, source: source))
        } catch let PipelineError.invalid(_, found) {
            return .failure(PipelineCheckFailure(problems: found))
        } catch let error as PipelineError {
            return .failure(PipelineCheckFailure(problems: [PipelineProblem(path: "", message: error.description)]))
        }
    }

    /// The pipeline a command runs with: the file at `path` when given, the built-in nightly pipeline otherwise.
    public static func load(_ path: String?) throws -> Pipeline {
        guard let path else { return .nightly }
        return try Pipeline.parse(try read(path), source: source(path))
    }

    /// The sample step's held-out fraction a pipeline states when it differs from the default, which a run
    /// does not apply (the lineage's stored policy decides the split).
    public static func statesUnappliedHeldOutFraction(_ pipeline: Pipeline) -> Bool {
        pipeline.sample.heldOutFraction != SampleParameters().heldOutFraction
    }
}

/// Why a pipeline file is not a valid pipeline.
public struct PipelineCheckFailure: Error, Sendable {
    public let problems: [PipelineProblem]
}
