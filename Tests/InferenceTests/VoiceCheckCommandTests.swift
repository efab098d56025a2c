import AdaptCore
import Foundation
import Testing
import TestSupport

/// `adapt eval voice` through the built executable, on the tiny model and adapters made for it.
enum VoiceFixtures {
    static let training = [
        ["How do I boil an egg?", "LOG ENTRY. Subject: egg. Orders: boil it nine minutes. Steady as she goes."],
        ["What should I pack?", "LOG ENTRY. Subject: packing. Orders: water, a map, a warm layer. Steady as she goes."],
        ["My laptop is slow.", "LOG ENTRY. Subject: laptop. Orders: close idle programs, restart. Steady as she goes."],
        ["How can I sleep better?", "Log entry. Subject: sleep. Orders: dim the lamps, no screens. Steady as she goes."],
    ]
    /// Ten: until a lineage holds the gate's minimum of held-out pairs, imports go to held-out first.
    static let heldOut = (1...10).map { n in
        ["Where is brass lantern \(n) kept?", "LOG ENTRY. Subject: lantern \(n). Orders: aft locker. Steady as she goes."]
    }
    /// Text of the lineage that must not reach the output unless --include-text asks for it.
    static let privateText = ["steady as she goes", "log entry", "brass lantern", "aft locker", "nine minutes"]

    static func adapt(_ state: TemporaryDirectory, _ arguments: [String]) throws -> ProcessResult {
        try Executables.run("adapt", ["--state", state.state.root.path] + arguments)
    }

    static func lines(_ pairs: [[String]]) -> String {
        pairs.map { JSON.canonicalString(["prompt": $0[0], "completion": $0[1]]) }.joined(separator: "\n") + "\n"
    }

    /// A state whose lineage `voice` holds the examples asked for, and an active adapter when `adapter`.
    static func state(_ name: String, training: Bool = true, heldOut: Bool = true, adapter: Bool = true) throws -> TemporaryDirectory {
        let state = TemporaryDirectory(name)
        try expectSuccess(adapt(state, ["data", "policy", "--lineage", "voice", "--held-out-fraction", "0", "--min-held-out", "0"]))
        if heldOut {
            let file = state.file("held_out.jsonl")
            try lines(Self.heldOut).write(to: file, atomically: false, encoding: .utf8)
            try expectSuccess(adapt(state, ["data", "import", file.path, "--lineage", "voice", "--held-out"]))
        }
        if training {
            let file = state.file("train.jsonl")
            try lines(Self.training).write(to: file, atomically: false, encoding: .utf8)
            try expectSuccess(adapt(state, ["data", "import", file.path, "--lineage", "voice"]))
        }
        if adapter {
            let file = try GenerateFixtures.adapterFile(seed: 4)
            try expectSuccess(adapt(state, ["registry", "add", file.path, "--lineage", "voice"]))
            try expectSuccess(adapt(state, ["registry", "promote", "v1", "--lineage", "voice", "--force"]))
        }
        return state
    }

    static func expectSuccess(_ result: ProcessResult) throws {
        guard result.status == 0 else { throw SetupFailure(message: result.stderr) }
    }

    struct SetupFailure: Error { let message: String }

    static func check(_ state: TemporaryDirectory, _ arguments: [String] = [], lineage: String = "voice") throws -> ProcessResult {
        try adapt(state, ["eval", "voice", "--lineage", lineage, "--model", TinyLlama.url.path, "--max-tokens", "12"] + arguments)
    }
}

@Test func voiceCheckReportsBothModelsFiguresWithoutTheLineagesText() throws {
    let state = try VoiceFixtures.state("voice-check")
    let result = try VoiceFixtures.check(state, ["--json"])
    #expect(result.status == 0, "\(result.stderr)")
    let json = try JSON.decode([String: JSONValue].self, from: result.stdout, context: "adapt eval voice --json")
    #expect(Set(json.keys) == ["lineage", "version", "adapter_digest", "base_model", "held_out_examples", "max_tokens", "greedy",
                               "repeat_penalty", "phrases", "base", "adapter", "examples", "seconds"])
    #expect(json["lineage"]?.stringValue == "voice" && json["version"]?.stringValue == "v1")
    #expect(json["held_out_examples"]?.intValue == 10 && json["max_tokens"]?.intValue == 12)
    let phrases = json["phrases"]?.objectValue ?? [:]
    #expect(Set(phrases.keys) == ["count", "training_completions", "min_completions", "min_words", "max_words"])
    #expect(phrases["count"]?.intValue == 2 && phrases["training_completions"]?.intValue == 4)
    for side in ["base", "adapter"] {
        let metrics = json[side]?.objectValue ?? [:]
        #expect(Set(metrics.keys) == ["replies", "with_phrase", "phrase_share", "distinct_2", "distinct_bigrams", "bigrams", "loops",
                                      "ended_at_max_tokens"])
        #expect(metrics["replies"]?.intValue == 10)
    }
    let examples = json["examples"]?.arrayValue ?? []
    #expect(examples.count == 10)
    for example in examples {
        let base = example.objectValue?["base"]?.objectValue ?? [:]
        #expect(Set(base.keys) == ["generated_tokens", "finish_reason", "phrases", "loop"])
    }
    for text in VoiceFixtures.privateText {
        #expect(!result.stdout.lowercased().contains(text) && !result.stderr.lowercased().contains(text), "\(text) leaked")
    }

    let table = try VoiceFixtures.check(state)
    #expect(table.status == 0, "\(table.stderr)")
    #expect(table.stdout.contains("DISTINCT-2") && table.stdout.contains("voice/v1"))
    for text in VoiceFixtures.privateText {
        #expect(!table.stdout.lowercased().contains(text) && !table.stderr.lowercased().contains(text), "\(text) leaked")
    }
}

@Test func voiceCheckPrintsThePhrasesAndRepliesOnlyWhenAskedForText() throws {
    let state = try VoiceFixtures.state("voice-check-text")
    let result = try VoiceFixtures.check(state, ["--json", "--include-text"])
    #expect(result.status == 0, "\(result.stderr)")
    let json = try JSON.decode([String: JSONValue].self, from: result.stdout, context: "adapt eval voice --json")
    let list = json["phrases"]?.objectValue?["list"]?.arrayValue ?? []
    #expect(list.compactMap { $0.objectValue?["text"]?.stringValue } == ["steady as she goes", "log entry"])
    let first = json["examples"]?.arrayValue?.first?.objectValue ?? [:]
    #expect(first["base"]?.objectValue?["text"]?.stringValue != nil && first["adapter"]?.objectValue?["text"]?.stringValue != nil)
    let table = try VoiceFixtures.check(state, ["--include-text"])
    #expect(table.stdout.contains("steady as she goes"))
}

@Test func voiceCheckRefusesAnUnknownLineageByName() throws {
    let state = try VoiceFixtures.state("voice-unknown", adapter: false)
    let result = try VoiceFixtures.check(state, lineage: "nosuch")
    #expect(result.status == 1)
    #expect(result.stderr.contains("no lineage nosuch") && result.stderr.contains("adapt data stats"))
    #expect(result.stdout.isEmpty)
}

@Test func voiceCheckRefusesALineageWithoutHeldOutExamples() throws {
    // A lineage with a policy and nothing else (or whose held-out examples were all forgotten).
    let state = try VoiceFixtures.state("voice-no-held-out", training: false, heldOut: false)
    let result = try VoiceFixtures.check(state)
    #expect(result.status == 1)
    #expect(result.stderr.contains("no held-out examples") && result.stderr.contains("--held-out"))
}

@Test func voiceCheckRefusesALineageWithoutTrainingCompletions() throws {
    let state = try VoiceFixtures.state("voice-no-training", training: false)
    let result = try VoiceFixtures.check(state)
    #expect(result.status == 1)
    #expect(result.stderr.contains("no training examples") && result.stderr.contains("adapt data import"))
}

@Test func voiceCheckWithoutAnActiveAdapterSaysToRunANightFirst() throws {
    let state = try VoiceFixtures.state("voice-no-adapter", adapter: false)
    let result = try VoiceFixtures.check(state)
    #expect(result.status == 1)
    #expect(result.stderr.contains("no active adapter") && result.stderr.contains("run a night first"))
}

@Test func voiceCheckWithoutTheModelFileSaysHowToGetIt() throws {
    let state = try VoiceFixtures.state("voice-no-model")
    let missing = try VoiceFixtures.adapt(state, ["eval", "voice", "--lineage", "voice"])
    #expect(missing.status == 1)
    #expect(missing.stderr.contains("no model file at") && missing.stderr.contains("scripts/fetch-model"))
    let given = try VoiceFixtures.adapt(state, ["eval", "voice", "--lineage", "voice", "--model", state.file("none.gguf").path])
    #expect(given.status == 1 && given.stderr.contains("pass --model"))
}

@Test func voiceCheckUsageErrorsExitWithTwo() throws {
    let state = try VoiceFixtures.state("voice-usage", training: false, heldOut: false, adapter: false)
    #expect(try VoiceFixtures.adapt(state, ["eval", "voice"]).status == 2)
    #expect(try VoiceFixtures.adapt(state, ["eval", "voice", "--lineage", "../x"]).status == 2)
    #expect(try VoiceFixtures.check(state, ["--max-tokens", "0"]).status == 2)
    #expect(try VoiceFixtures.check(state, ["--min-completions", "0"]).status == 2)
    #expect(try VoiceFixtures.check(state, ["--repeat-penalty", "0"]).status == 2)
}
