import AdaptCore
import Foundation
import Pipelines
import Testing

/// The repository root, found from this file's path (Tests/PipelinesTests/…).
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

@Test func emptyFileResolvesToTheNightlyPipeline() throws {
    let pipeline = try Pipeline.parse(Data("{}".utf8), source: "empty.json")
    #expect(pipeline.digest == Pipeline.nightly.digest)
    #expect(pipeline.description == "")
    var described = pipeline
    described.description = Pipeline.nightly.description
    #expect(described == .nightly)
    #expect(pipeline.steps.map(\.name) == ["prune", "sample", "train", "eval", "promote"])
    #expect(pipeline.steps.map(\.dependsOn) == [[], ["prune"], ["sample"], ["train"], ["eval"]])
}

@Test func defaultsAreTheDocumentedValues() {
    let p = Pipeline.nightly
    #expect(p.seed == nil)
    #expect(p.prune.ttlDays == 30)
    #expect(p.privacy.maxUsesPerExample == 8 && p.privacy.maxTokensPerNight == 65_536)
    #expect(p.sample.sampleSize == 128 && p.sample.heldOutFraction == 0.25)
    #expect(p.train.steps == 100 && p.train.rank == 8 && p.train.alpha == 16 && p.train.dropout == 0.05)
    #expect(p.train.targets == [.attnQ, .attnK, .attnV, .attnOutput])
    #expect(p.train.learningRate == 5e-4 && p.train.schedule == .cosine && p.train.warmupSteps == 10)
    #expect(p.train.batchSize == 4 && p.train.gradAccumulation == 1 && p.train.maxLength == 256)
    #expect(p.train.checkpointInterval == 10 && p.train.blasThreads == .auto)
    #expect(p.train.earlyStopping == EarlyStopping(everySteps: 10, patience: 3))
    #expect(p.eval == EvalParameters(alpha: 0.05, minPairs: 10, alternative: .less, zeroMethod: .wilcox))
    #expect(p.device == DevicePolicy(minBatteryPercent: 30, maxTemperatureCelsius: 85, minAvailableMemoryMB: 1024,
                                     retryAfterMinutes: 30))
    #expect(p.steps.first { $0.kind == .train }?.maxAttempts == 5)
    #expect(p.steps.first { $0.kind == .train }?.leaseSeconds == 120)
}

@Test func bundledNightlyFileStatesExactlyTheBuiltInPipeline() throws {
    let file = try Pipeline.load(contentsOf: repositoryRoot.appendingPathComponent("pipelines/nightly.json"))
    #expect(file == .nightly)
    #expect(file.digest == Pipeline.nightly.digest)
}

@Test func bundledNightlyFileSpellsOutTheSharedTrainingDefaults() throws {
    let train = try Pipeline.load(contentsOf: repositoryRoot.appendingPathComponent("pipelines/nightly.json")).train
    #expect(train.steps == TrainingDefaults.steps && train.learningRate == TrainingDefaults.learningRate)
    #expect(train.dropout == TrainingDefaults.dropout && train.batchSize == TrainingDefaults.batchSize)
    #expect(train.warmupSteps == TrainingDefaults.warmupSteps)
    #expect(train.rank == TrainingDefaults.rank && train.alpha == TrainingDefaults.alpha)
    #expect(train.earlyStopping == EarlyStopping(everySteps: TrainingDefaults.earlyStoppingEvery,
                                                 patience: TrainingDefaults.earlyStoppingPatience))
}

@Test func partialFileKeepsDefaultsForEverythingElse() throws {
    let pipeline = try Pipeline.parse(Data(#"{"name": "mine", "seed": 7, "train": {"rank": 16, "early_stopping": null}}"#.utf8),
                                      source: "mine.json")
    #expect(pipeline.name == "mine")
    #expect(pipeline.seed == 7)
    #expect(pipeline.train.rank == 16)
    #expect(pipeline.train.earlyStopping == nil)
    #expect(pipeline.train.alpha == 16)
    #expect(pipeline.eval == EvalParameters())
    #expect(pipeline.steps == Pipeline.nightly.steps)
}

@Test func stepDefaultsDependOnTheKind() throws {
    let json = #"{"steps": [{"name": "s", "kind": "sample"}, {"name": "t", "kind": "train", "depends_on": ["s"], "priority": -1}]}"#
    let pipeline = try Pipeline.parse(Data(json.utf8), source: "two.json")
    #expect(pipeline.steps[0].maxAttempts == 3 && pipeline.steps[0].leaseSeconds == 60)
    #expect(pipeline.steps[1].maxAttempts == 5 && pipeline.steps[1].leaseSeconds == 120 && pipeline.steps[1].priority == -1)
}

@Test func resolvedPipelineRoundTripsThroughItsOwnJSON() throws {
    var custom = Pipeline.nightly
    custom.train.earlyStopping = nil
    custom.seed = 42
    custom.train.targets = [.ffnUp, .attnV]
    let text = JSON.pretty(custom)
    #expect(text.contains("\"early_stopping\" : null"))
    let again = try Pipeline.parse(Data(text.utf8), source: "round.json")
    #expect(again == custom)
    #expect(again.digest == custom.digest)
}

@Test func digestIgnoresKeyOrderAndSpellingOfDefaults() throws {
    let a = try Pipeline.parse(Data(#"{"train": {"rank": 8, "alpha": 16.0}, "name": "nightly"}"#.utf8), source: "a")
    let b = try Pipeline.parse(Data(#"{"name": "nightly"}"#.utf8), source: "b")
    #expect(a.digest == b.digest)
    let c = try Pipeline.parse(Data(#"{"train": {"rank": 9}}"#.utf8), source: "c")
    #expect(c.digest != b.digest)
}

@Test func descriptionDoesNotChangeTheDigest() {
    var reworded = Pipeline.nightly
    reworded.description = "my words"
    #expect(reworded.digest == Pipeline.nightly.digest)
    #expect(reworded != Pipeline.nightly)
}
