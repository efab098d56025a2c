import AdaptCore
import Foundation
@testable import Pipelines
import Testing
import TestSupport

/// `train.blas_threads`: "auto" (the default, resolved by the worker that claims the step) or a fixed count.

@Test func blasThreadsTakesAutoOrACountAndDefaultsToAuto() throws {
    #expect(problems(#"{"train": {"blas_threads": "auto"}}"#) == [])
    #expect(problems(#"{"train": {"blas_threads": 2}}"#) == [])
    #expect(Pipeline.nightly.train.blasThreads == .auto)
    #expect(try Pipeline.parse(Data("{}".utf8), source: "empty.json").train.blasThreads == .auto)
    let fixed = try Pipeline.parse(Data(#"{"train": {"blas_threads": 2}}"#.utf8), source: "two.json")
    #expect(fixed.train.blasThreads == .fixed(2) && fixed.digest != Pipeline.nightly.digest)
    let spelled = try Pipeline.parse(Data(#"{"train": {"blas_threads": "auto"}}"#.utf8), source: "auto.json")
    #expect(spelled.digest == (try Pipeline.parse(Data("{}".utf8), source: "empty.json")).digest)
}

@Test(arguments: [#""all""#, #""Auto""#, "0", "-2", "257", "1.5", "true", "null", "[2]"])
func blasThreadsRefusesAnythingElseNamingTheFieldAndTheAllowedValues(_ value: String) throws {
    let found = problems(#"{"train": {"blas_threads": "# + value + "}}")
    #expect(found.count == 1, "\(found)")
    let message = try #require(found.first)
    #expect(message.hasPrefix("train.blas_threads must be \"auto\""), "\(message)")
    #expect(message.contains("or an integer from 1 to 256, got "), "\(message)")
}

@Test func aNearMissOfAutoIsSuggested() {
    #expect(problems(#"{"train": {"blas_threads": "atuo"}}"#).first?.hasSuffix("; did you mean auto?") == true)
}

@Test func checkAcceptsAutoAndRefusesGarbageWithTheFieldAndTheWayOut() throws {
    let directory = TemporaryDirectory()
    let good = directory.file("auto.json"), bad = directory.file("bad.json")
    try Data(#"{"train": {"blas_threads": "auto"}}"#.utf8).write(to: good)
    try Data(#"{"train": {"blas_threads": "max"}}"#.utf8).write(to: bad)
    #expect(try Executables.run("adapt", ["pipeline", "check", good.path]).status == 0)
    let refused = try Executables.run("adapt", ["pipeline", "check", bad.path])
    #expect(refused.status == 1)
    #expect(refused.stderr.contains(#"train.blas_threads must be "auto" (every core the worker may use, resolved when it claims the step) or an integer from 1 to 256, got "max""#),
            "\(refused.stderr)")
}

@Test func trainAndEvalInputsCarryAutoAndTheManifestSaysSo() throws {
    for (text, expected) in [("{}", JSONValue.string("auto")), (#"{"train": {"blas_threads": 2}}"#, .int(2))] {
        let pipeline = try Pipeline.parse(Data(text.utf8), source: "test.json")
        let run = try plan(pipeline: pipeline, lineage: "mail", night: Night(parsing: "2026-11-30"), seed: 7)
        #expect(run.manifest["blas_threads"] == expected)
        for step in run.steps {
            #expect(step.input["blas_threads"] == (["train", "eval"].contains(step.kind) ? expected : nil), "\(step.kind)")
            #expect(StepInputCheck.problems(step.input, kind: StepKind(rawValue: step.kind)!).isEmpty, "\(step.kind)")
        }
    }
}

@Test func aStepInputWithAnotherWordForTheThreadsIsRefused() throws {
    let run = try plan(pipeline: .nightly, lineage: "mail", night: Night(parsing: "2026-11-30"), seed: 7)
    for kind in [StepKind.train, .eval] {
        var input = try #require(run.steps.first { $0.kind == kind.rawValue }?.input.objectValue)
        input["blas_threads"] = .string("many")
        let found = StepInputCheck.problems(.object(input), kind: kind).map(\.message)
        #expect(found.count == 1 && found.first?.hasPrefix("blas_threads must be \"auto\"") == true, "\(found)")
    }
}

@Test func theThreadCountDecodesFromAStepInputOfEitherShape() throws {
    #expect(try JSON.decode(BLASThreadCount.self, from: Data(#""auto""#.utf8), context: "t") == .auto)
    #expect(try JSON.decode(BLASThreadCount.self, from: Data("1".utf8), context: "t") == .fixed(1))
    #expect(throws: (any Error).self) { try JSON.decode(BLASThreadCount.self, from: Data(#""two""#.utf8), context: "t") }
}

@Test func allowedCoresCountsTheAffinityListOfTheStatusFile() throws {
    #expect(DeviceReadings.cpuCount(list: "0") == 1)
    #expect(DeviceReadings.cpuCount(list: "0-3,8,10-11") == 7)
    #expect(DeviceReadings.cpuCount(list: "") == nil)
    #expect(DeviceReadings.cpuCount(list: "3-1") == nil)
    #expect(DeviceReadings.cpuCount(list: "a-b") == nil)
    #expect(DeviceReadings.allowedCores(status: "Name:\tadapt\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n") == 2)
    let directory = TemporaryDirectory()
    try FileManager.default.createDirectory(at: directory.file("proc/self"), withIntermediateDirectories: true)
    try Data("Cpus_allowed_list:\t0-2\n".utf8).write(to: directory.file("proc/self/status"))
    #expect(DeviceReadings.allowedCores(root: directory.url) == 3)
    // This process's own: at least one, and no more than the processors online.
    let own = try #require(DeviceReadings.allowedCores())
    #expect(own >= 1 && own <= ProcessInfo.processInfo.activeProcessorCount)
}

/// A container started with `--cpus 2` sees every host CPU in its affinity: the control group's quota is what bounds
/// an `auto` thread count, in either cgroup version, the tightest of the group and its ancestors.
@Test func theControlGroupsCPUQuotaBoundsTheCoresInEitherVersion() throws {
    var kept: [TemporaryDirectory] = []   // a TemporaryDirectory is removed when released
    func tree(_ files: [String: String]) throws -> URL {
        let directory = TemporaryDirectory()
        kept.append(directory)
        for (path, text) in files {
            let url = directory.file(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }
        return directory.url
    }
    // v2: the job's own group says 1.5 CPUs (rounded up to 2), its parent 4.
    let v2 = try tree(["proc/self/cgroup": "0::/jobs/night\n", "sys/fs/cgroup/jobs/night/cpu.max": "150000 100000\n",
                       "sys/fs/cgroup/jobs/cpu.max": "400000 100000\n", "sys/fs/cgroup/cpu.max": "max 100000\n"])
    #expect(DeviceReadings.cgroupCPULimit(root: v2) == 2)
    // v1, the cpu controller mounted with cpuacct, inside a namespace whose path is the root.
    let v1 = try tree(["proc/self/cgroup": "4:memory:/x\n3:cpu,cpuacct:/\n0::/\n",
                       "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "300000\n", "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n"])
    #expect(DeviceReadings.cgroupCPULimit(root: v1) == 3)
    // No limit anywhere: `max`, a quota of -1, or no files at all.
    let none = try tree(["proc/self/cgroup": "1:cpu:/a\n0::/\n", "sys/fs/cgroup/cpu.max": "max 100000\n",
                         "sys/fs/cgroup/cpu/a/cpu.cfs_quota_us": "-1\n", "sys/fs/cgroup/cpu/a/cpu.cfs_period_us": "100000\n"])
    #expect(DeviceReadings.cgroupCPULimit(root: none) == nil)
    #expect(DeviceReadings.cgroupCPULimit(root: try tree([:])) == nil)
}
