import AdaptCore
import Foundation
import Registry
import Testing
import TestSupport

// `adapt registry add` stores only what the pipeline could use: an adapt adapter file. It takes no gate report: only
// the engine's own (`adapt eval`) makes a version promotable. A refusal registers nothing. Gate verdicts the
// registry keeps in a version's metrics must agree with their numbers.

@Test func registryAddRefusesAFileThatIsNotAnAdapter() throws {
    let cli = RegistryCLI()
    let text = try cli.file("notes.txt", Data("these are my notes, not an adapter\n".utf8))
    let result = try cli.run(["registry", "add", text, "--lineage", "mail"])
    #expect(result.status == 1)
    #expect(result.stderr.contains("is not an adapt adapter file"), "\(result.stderr)")
    #expect(try cli.json(["registry", "list"]).arrayValue == [])
    // A real adapter whose trailing digest was damaged is refused too.
    var damaged = TestAdapter.bytes(1)
    damaged[damaged.count - 1] ^= 0xff
    #expect(try cli.run(["registry", "add", try cli.file("damaged.bin", damaged), "--lineage", "mail"]).status == 1)
    #expect(try cli.run(["registry", "add", try cli.file("good.bin", TestAdapter.bytes(1)), "--lineage", "mail"]).status == 0)
}

@Test func registryAddRefusesAPathThatIsNotARegularFile() throws {
    let cli = RegistryCLI()
    let directory = try cli.run(["registry", "add", cli.dir.url.path, "--lineage", "mail"])
    #expect(directory.status == 1 && directory.stderr.contains("a directory"), "\(directory.stderr)")
    #expect(try cli.run(["registry", "add", "", "--lineage", "mail"]).status == 2)
}

/// Reports a hand edit could produce; none is what the gate prints.
let inconsistentGateReports: [String] = [
    #"{"outcome": "better", "n": 12, "p_value": 0.99, "alpha": 0.05, "method": "exact", "zero_method": "wilcox", "alternative": "less"}"#,
    #"{"outcome": "better", "n": -5, "p_value": 0.001, "alpha": 0.05, "method": "exact", "zero_method": "wilcox", "alternative": "less"}"#,
    #"{"outcome": "better", "n": 12, "p_value": 0.001, "alpha": 7, "method": "exact", "zero_method": "wilcox", "alternative": "less"}"#,
    #"{"outcome": "better", "n": 12, "p_value": -3, "alpha": 0.05, "method": "exact", "zero_method": "wilcox", "alternative": "less"}"#,
    #"{"outcome": "better", "n": 0, "method": "exact", "zero_method": "wilcox", "alternative": "less"}"#,
    #"{"outcome": "better", "n": 12, "p_value": 0.001, "alpha": 0.05, "method": "exact", "zero_method": "wilcox", "alternative": "greater"}"#,
    #"{"outcome": "worse", "n": 12, "p_value": 0.001, "alpha": 0.05, "method": "exact", "zero_method": "wilcox", "alternative": "less"}"#,
    #"{"outcome": "better", "n": 12, "p_value": 0.001, "alpha": 0.05, "method": "exact", "zero_method": "wilcox", "alternative": "sideways"}"#,
]

@Test(arguments: inconsistentGateReports)
func aGateVerdictThatContradictsItsNumbersIsRefusedAsMetrics(report: String) throws {
    let f = try RegistryFixture()
    let gate = try JSON.decode(GateSummary.self, from: Data(report.utf8), context: "r")
    #expect(throws: RegistryError.self) { try gate.checkConsistency() }
    #expect(throws: RegistryError.self) {
        try f.registry.register(adapterData: TestAdapter.bytes(2), lineage: RegistryFixture.lineage, metadata: AdapterMetadata(),
                                metrics: VersionMetrics(gate: gate))
    }
    #expect(try f.registry.versions() == [])
}

@Test func registryAddTakesNoGateReport() throws {
    let cli = RegistryCLI()
    let adapter = try cli.file("a.bin", TestAdapter.bytes(10))
    let result = try cli.run(["registry", "add", adapter, "--lineage", "mail", "--gate-report", try cli.gateReport(better: true)])
    #expect(result.status == 2, "\(result.stderr)")
    #expect(try cli.json(["registry", "list"]).arrayValue == [])
    let notEnough = #"{"outcome": "not_enough_evidence", "n": 0, "p_value": null, "alpha": 0.05, "method": "exact", "zero_method": "wilcox", "alternative": "less"}"#
    #expect(throws: Never.self) { try JSON.decode(GateSummary.self, from: Data(notEnough.utf8), context: "r").checkConsistency() }
}

@Test func registeringAnAdapterWhoseBlobIsCorruptRepairsTheBlob() throws {
    let cli = RegistryCLI()
    let bytes = TestAdapter.bytes(20)
    let adapter = try cli.file("a.bin", bytes)
    #expect(try cli.run(["registry", "add", adapter, "--lineage", "mail"]).status == 0)
    try Data("corrupted".utf8).write(to: cli.dir.state.blobs.url(for: Digest.sha256(bytes)))
    #expect(try cli.run(["registry", "verify"]).status == 1)

    #expect(try cli.run(["registry", "add", adapter, "--lineage", "mail"]).status == 0)
    let verify = try cli.run(["registry", "verify", "--json"])
    #expect(verify.status == 0, "\(verify.stdout)")
}

@Test(arguments: ["a.b", "-", ".."])
func registryAddRefusesALineageThePipelineCouldNotUse(name: String) throws {
    let cli = RegistryCLI()
    let result = try cli.run(["registry", "add", try cli.file("a.bin", TestAdapter.bytes(30)), "--lineage", name])
    #expect(result.status == 2, "\(result.stderr)")
    #expect(try cli.json(["registry", "list"]).arrayValue == [])
}
