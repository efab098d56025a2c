import AdaptCore
import Foundation
import Registry
import Storage
import Testing
import TestSupport

// Hosts that share only a PostgreSQL database write one registry at once: a lineage's writers take turns, so
// numbers stay consecutive and every pointer move starts where the one before it ended.

@Test func hostsRegisteringAndPromotingAtOnceKeepNumbersAndHistoryInOrder() throws {
    let f = try RegistryFixture(.postgres)
    let hosts = try (0..<4).map { _ in try f.secondRegistry() }
    let failures = Locked<[String]>([])
    DispatchQueue.concurrentPerform(iterations: hosts.count) { host in
        for night in 0..<6 {
            do {
                let bytes = Data("host \(host) night \(night)".utf8) + Data(repeating: UInt8(host), count: 200)
                let version = try hosts[host].register(adapterData: bytes, lineage: RegistryFixture.lineage,
                                                       metadata: AdapterMetadata(), metrics: RegistryFixture.gate(.better))
                // Another host may promote between the report and the promotion: the report then names an incumbent
                // that moved and is refused, as it should be; the host scores again against the new one.
                while true {
                    do { try hosts[host].promoteScored(version.reference); break } catch RegistryError.notApprovedByGate { continue }
                }
            } catch {
                failures.withLock { $0.append("host \(host) night \(night): \(error)") }
            }
        }
    }
    #expect(failures.withLock { $0 } == [])
    #expect(try f.registry.versions().map(\.number) == Array(1...24))
    let history = try f.registry.history(lineage: RegistryFixture.lineage)
    #expect(history.count == 24)
    for (previous, next) in zip(history, history.dropFirst()) {
        #expect(next.fromVersionID == previous.toVersionID, "move \(next.id) did not start where move \(previous.id) ended")
    }
    #expect(try f.registry.active(lineage: RegistryFixture.lineage)?.id == history.last?.toVersionID)
}
