import AdaptCore
import AdapterExchange
import Foundation
import Registry
import Storage

/// The active exports (`exports/<lineage>/`): each serves the version the registry has active, or is absent when
/// the lineage uses the base model. Doctor only looks; `adapt work` rewrites what differs when it starts.
extension Doctor {
    static func exportsCheck(_ state: StateDirectory) -> Check? {
        guard FileManager.default.fileExists(atPath: state.database.path),
              let database = try? Database(readingAt: state.database.path),
              (try? database.queryOne("SELECT 1 FROM sqlite_master WHERE name = 'registry_active'")) != nil
        else {
            // No registry yet: nothing can be active, so an export would be left from another state's files.
            return nil
        }
        let root = state.root.path
        let mismatches: [ActiveExportSync.Mismatch]
        do {
            let registry = try AdapterRegistry(database: database, blobs: state.blobs)
            mismatches = try ActiveExportSync.mismatches(registry: registry, state: state)
        } catch {
            return Check("active_exports", .warning, "the registry cannot be read to compare the active exports with it: \(error)",
                         fix: "open the state once with a writing command of this adapt version (e.g. adapt --state \(root) registry list "
                             + "after adapt enqueue) so its migrations run")
        }
        guard !mismatches.isEmpty else {
            return Check("active_exports", .ok, "every lineage's export in \(root)/exports serves its active version")
        }
        let shown = mismatches.prefix(3).map(\.problem).joined(separator: "; ") + (mismatches.count > 3 ? "; …" : "")
        return Check("active_exports", .warning, "llama-server or Ollama would serve another adapter than the registry's: \(shown)",
                     fix: "adapt work rewrites the exports from the active versions when it starts: stop a running one and start it "
                         + "again, or run adapt --state \(root) work --exit-when-idle")
    }
}
