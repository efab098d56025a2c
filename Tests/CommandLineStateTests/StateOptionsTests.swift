@testable import CommandLineKit
import CommandLineState
import Storage
import Testing

@Test func stateOptionsPreferTheOptionThenTheEnvironmentThenTheDefault() throws {
    let global = { (arguments: [String]) in
        try CommandLineTool.parse(arguments, options: [], global: StateOptions.all, positionals: []).1
    }
    let environment = ["ADAPT_STATE": "/from-env", "ADAPT_DURABILITY": "normal"]
    #expect(try StateOptions.stateDirectory(global(["--state", "/given"]), environment: environment).root.path == "/given")
    #expect(try StateOptions.stateDirectory(global([]), environment: environment).root.path == "/from-env")
    #expect(try StateOptions.stateDirectory(global([]), environment: [:]).root.lastPathComponent == "state")
    #expect(try StateOptions.durability(global(["--durability", "full"]), environment: environment) == .full)
    #expect(try StateOptions.durability(global([]), environment: environment) == .normal)
    #expect(try StateOptions.durability(global([]), environment: ["ADAPT_DURABILITY": ""]) == .full)
    #expect { try StateOptions.stateDirectory(global(["--state", ""]), environment: [:]) } throws: {
        ($0 as? UsageError)?.message == "--state needs a directory, got an empty path"
    }
    #expect { try StateOptions.durability(global(["--durability", "fast"]), environment: [:]) } throws: {
        ($0 as? UsageError)?.message == "--durability: unknown durability 'fast'; use full or normal"
    }
    #expect { try StateOptions.durability(global([]), environment: ["ADAPT_DURABILITY": "fast"]) } throws: {
        ($0 as? UsageError)?.message == "ADAPT_DURABILITY: unknown durability 'fast'; use full or normal"
    }
}

@Test func theWorkersGetTheStateTheCommandLineResolved() throws {
    let global = { (arguments: [String]) in
        try CommandLineTool.parse(arguments, options: [], global: StateOptions.all, positionals: []).1
    }
    #expect(try StateOptions.forwarded(global(["--durability", "NORMAL"]), environment: ["ADAPT_STATE": "/s"])
            == ["--state", "/s", "--durability", "normal"])
    #expect(try StateOptions.forwarded(global(["--state", "/given"]), environment: ["ADAPT_DURABILITY": "normal"])
            == ["--state", "/given"])
}
