import AdaptCore
import CommandLineKit
import Foundation
import Registry
import Storage

/// `adapt registry …`: adapter versions, the active pointer per lineage, promotion, rollback, verification.
enum RegistryCommands {
    static let all: [Command] = [list, show, add, RegistryExchangeCommands.export, promote, rollback, history, verify] + shortcuts

    /// `adapt promote [--force]` and `adapt rollback`, the names DESIGN.md gives people: the same commands.
    static let shortcuts: [Command] = [promote, rollback].map { command in
        Command(command.path.dropFirst().joined(separator: " "), summary: command.summary, discussion: command.discussion,
                options: command.options, positionals: command.positionals, run: command.run)
    }

    /// `--lineage L` of the commands that read what is registered: the identifier rule, looser than
    /// `Lineage.rule` (it allows '.'), so that lineages registered under it stay reachable. `registry add`
    /// names a new lineage with `Add.lineage` instead.
    static let lineage = Option<ShortIdentifier?>("lineage", value: "L", default: nil, help: "the lineage (e.g. mail)") { text in
        guard let id = ShortIdentifier(text) else { throw UsageError("must be 1 to 64 letters, digits, '.', '_' or '-'") }
        return id
    }
    static let force = Flag("force", help: "promote without a 'better' gate outcome (recorded)")

    static func registry(_ invocation: Invocation) throws -> AdapterRegistry {
        let state = try GlobalOptions.stateDirectory(invocation)
        return try AdapterRegistry(database: try GlobalOptions.database(invocation), blobs: state.blobs)
    }

    /// The registry of a command that only reads: read-only, and an error if the state does not exist.
    static func readingRegistry(_ invocation: Invocation) throws -> AdapterRegistry {
        let state = try GlobalOptions.stateDirectory(invocation)
        return try AdapterRegistry(database: try GlobalOptions.readOnlyDatabase(invocation), blobs: state.blobs)
    }

    /// `VERSION` is `vN` or `LINEAGE/vN`; `--lineage` fills in a bare `vN`.
    static func reference(_ invocation: Invocation) throws -> VersionReference {
        let text = try invocation.arguments.required("VERSION")
        let parsed: VersionReference
        do { parsed = try VersionReference(parsing: text) } catch { throw UsageError("\(error)") }
        let option = try invocation.arguments[lineage]
        if let option, let given = parsed.lineage, option != given {
            throw UsageError("VERSION names lineage \(given) but --lineage says \(option)")
        }
        return VersionReference(lineage: parsed.lineage ?? option, number: parsed.number)
    }

    // MARK: JSON shapes (DESIGN.md: `registry list` prints {version, lineage, digest, active, created_at, metrics})

    struct VersionJSON: Encodable {
        let version: String
        let lineage: String
        let digest: String
        let active: Bool
        let created_at: String
        let metrics: VersionMetrics
        let parent: String?
        let size: Int
        let metadata: AdapterMetadata?
        /// Retired versions (trained on erased examples) cannot be made active again.
        let retired: Bool
        let retired_at: String?
        /// For an imported adapter: the weights digest an export of the same weights reports.
        var weights_digest: String?

        init(_ v: AdapterVersion, active: Bool, parent: AdapterVersion?, full: Bool) {
            version = v.name
            lineage = v.lineage.value
            digest = v.adapterDigest.hex
            self.active = active
            created_at = Timestamp.iso8601(v.createdAt)
            metrics = v.metrics
            self.parent = parent?.name
            size = v.size
            metadata = full ? v.metadata : nil
            retired = v.isRetired
            retired_at = v.retiredAt.map(Timestamp.iso8601)
        }
    }

    struct MoveJSON: Encodable {
        let lineage: String
        let from: String?
        let to: String?
        let reason: String
        let bypassed: String?
        let actor: String
        let at: String
        let changed: Bool

        enum CodingKeys: String, CodingKey { case lineage, from, to, reason, bypassed, actor, at, changed }

        // `from`/`to` are null for the base model: written out so the shape never changes.
        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(lineage, forKey: .lineage)
            try c.encode(from, forKey: .from)
            try c.encode(to, forKey: .to)
            try c.encode(reason, forKey: .reason)
            try c.encode(bypassed, forKey: .bypassed)
            try c.encode(actor, forKey: .actor)
            try c.encode(at, forKey: .at)
            try c.encode(changed, forKey: .changed)
        }
    }

    static func moveJSON(_ change: AdapterRegistry.PointerChange) -> MoveJSON {
        MoveJSON(lineage: change.lineage.value, from: change.from?.name, to: change.to?.name,
                 reason: change.move?.reason.rawValue ?? "none", bypassed: change.bypassed,
                 actor: change.move?.actor.value ?? "-", at: change.move.map { Timestamp.iso8601($0.at) } ?? "-",
                 changed: change.move != nil)
    }

    // MARK: Commands

    static let list = Command(
        "registry list", summary: "list adapter versions and which one is active per lineage",
        options: [lineage, .json]
    ) { invocation in
        let registry = try readingRegistry(invocation)
        let versions = try registry.versions(lineage: try invocation.arguments[lineage])
        let active = try registry.activeIDs()
        let byID = Dictionary(uniqueKeysWithValues: versions.map { ($0.id, $0) })
        let rows = versions.map { v in
            VersionJSON(v, active: active.contains(v.id), parent: v.parentID.flatMap { byID[$0] }, full: false)
        }
        if invocation.arguments[.json] { Console.print(JSON.pretty(rows)); return }
        if rows.isEmpty { Console.error("no adapter versions registered"); return }
        var table = Table("LINEAGE", "VERSION", "ACTIVE", "DIGEST", "GATE", "CREATED")
        for (row, v) in zip(rows, versions) {
            table.append([row.lineage, row.version, row.active ? "*" : (row.retired ? "retired" : ""), v.adapterDigest.short,
                          v.metrics.gate?.outcome.rawValue ?? "-", row.created_at])
        }
        Console.print(table.render())
    }

    static let show = Command(
        "registry show", summary: "show one adapter version: digest, parent, metadata, metrics",
        options: [lineage, .json], positionals: [PositionalSpec("VERSION", help: "vN or LINEAGE/vN")]
    ) { invocation in
        let registry = try readingRegistry(invocation)
        let version = try registry.version(try reference(invocation))
        let active = try registry.active(lineage: version.lineage)
        let parent = try version.parentID.map { try registry.version(id: $0) }
        let json = VersionJSON(version, active: active?.id == version.id, parent: parent, full: true)
        if invocation.arguments[.json] { Console.print(JSON.pretty(json)); return }
        Console.print("""
            \(json.lineage)/\(json.version)\(json.active ? " (active)" : "")
            digest     \(json.digest)
            size       \(json.size) bytes
            parent     \(json.parent ?? "-")
            created    \(json.created_at)
            metadata   \(JSON.canonicalString(version.metadata))
            metrics    \(JSON.canonicalString(version.metrics))
            """)
    }

    static let add = Command(
        "registry add", summary: "register an adapter file as the next version of a lineage (not activated)",
        discussion: """
            The file must be an adapt adapter (as 'adapt train' writes it); it is copied into the \
            content-addressed blob store. --gate-report takes the JSON printed by 'adapt gate --json'; its \
            outcome is what 'registry promote' checks, so a report whose numbers contradict its outcome is \
            refused. Metadata holds only numbers, digests and identifiers.
            """,
        options: [Add.lineage, Add.parent, Add.gateReport, Add.baseModel, Add.chatConvention, .json]
            + RegistryExchangeCommands.importOptions,
        positionals: [PositionalSpec("FILE", optional: true, help: "the adapter file (or one of the --from-… options)")]
    ) { invocation in
        let args = invocation.arguments
        // A new version's lineage follows the rule of every other command that names one ('.' is refused), so
        // the pipeline can later find it; existing lineages stay reachable through the looser identifier rule.
        let lineage = ShortIdentifier(try args.required(Add.lineage))
        let source = try RegistryExchangeCommands.source(invocation)
        if source != nil, args.string("FILE") != nil { throw UsageError("pass FILE or a --from-… option, not both") }
        let imported = try source.map { format, path in
            try RegistryExchangeCommands.importedAdapter(format: format, path: path, lineage: lineage,
                                                        registry: try RegistryCommands.registry(invocation), invocation: invocation)
        }
        let data: Data
        if let imported { data = imported.data } else {
            let path = try args.required("FILE")
            data = try readWhole(path)
            // A text file registered and promoted with --force would fail every later night's eval.
            if !data.isEmpty { try FileFormatCheck.requireAdapter(data, path: path) }
        }
        var metadata = imported?.metadata ?? AdapterMetadata()
        if let digest = try args[Add.baseModel] { metadata.baseModel = digest }
        if let id = try args[Add.chatConvention] { metadata.chatConvention = id }
        var metrics = VersionMetrics()
        if let reportPath = try args[Add.gateReport] {
            let gate = try JSON.decode(GateSummary.self, from: try readWhole(reportPath), context: reportPath)
            try gate.checkConsistency()
            metrics.gate = gate
        }
        let parent = try args[Add.parent]
        let registry = try registry(invocation)
        let version = try registry.register(adapterData: data, lineage: lineage, parent: parent, metadata: metadata, metrics: metrics)
        if args[.json] {
            var json = VersionJSON(version, active: false, parent: nil, full: true)
            json.weights_digest = imported?.weights.hex
            Console.print(JSON.pretty(json))
        } else {
            Console.print("registered \(version.lineage)/\(version.name) (\(version.adapterDigest.short), \(version.size) bytes)")
        }
    }

    /// The options of `registry add` besides the `--from-…` sources.
    enum Add {
        /// A new version's lineage follows `Lineage.rule`, as every command that names a new one.
        static let lineage = Option<Lineage?>(lineage: "the lineage (e.g. mail)")
        static let parent = Option<VersionReference?>("parent", value: "vN", default: nil,
                                                      help: "the version this one was trained from") { text in
            try VersionReference(parsing: text)
        }
        static let gateReport = Option<String?>("gate-report", value: "FILE",
                                                help: "record this gate report (adapt gate --json) as the version's gate metrics")
        static let baseModel = Option<Digest?>("base-model", value: "DIGEST", default: nil,
                                               help: "SHA-256 of the base model file") { text in
            guard let digest = Digest(hex: text) else { throw UsageError("expects a 64-digit SHA-256") }
            return digest
        }
        static let chatConvention = Option<ShortIdentifier?>("chat-convention", value: "NAME", default: nil,
                                                             help: "chat formatting convention used in training (e.g. chatml)") { text in
            guard let id = ShortIdentifier(text) else { throw UsageError("must be a short identifier") }
            return id
        }
    }

    /// A regular file's bytes; a missing path, a directory, a FIFO or a device is a clear error, not a hang.
    static func readWhole(_ path: String) throws -> Data {
        guard !path.isEmpty else { throw UsageError("an empty path names no file; pass the file's path") }
        guard let data = try AtomicFile.read(URL(fileURLWithPath: path)) else {
            throw CoreError.fileUnreadable(path: path, reason: "no such file")
        }
        return data
    }

    static let promote = Command(
        "registry promote", summary: "make a version the active adapter of its lineage (a pointer flip)",
        discussion: """
            Refuses unless the version's recorded gate outcome is 'better'. --force promotes anyway, says what \
            it bypassed, and records 'force' in the history. The adapter file is verified first.
            """,
        options: [lineage, force, .json],
        positionals: [PositionalSpec("VERSION", help: "vN or LINEAGE/vN")]
    ) { invocation in
        let registry = try registry(invocation)
        let force = invocation.arguments[RegistryCommands.force]
        let change = try registry.promote(try reference(invocation), reason: force ? .force : .gate)
        if let bypassed = change.bypassed { Console.error("adapt: --force bypassed: \(bypassed); recorded in the history") }
        if change.move != nil { RegistryExchangeCommands.updateActiveExport(lineage: change.lineage, invocation: invocation) }
        if invocation.arguments[.json] { Console.print(JSON.pretty(moveJSON(change))); return }
        if change.move == nil {
            Console.print("\(change.lineage)/\(change.to?.name ?? "base") is already active")
        } else {
            Console.print("\(change.lineage): \(change.from?.name ?? "base") → \(change.to?.name ?? "base")")
        }
    }

    static let rollback = Command(
        "registry rollback", summary: "point a lineage back to the version active before the current one (or the base model)",
        options: [lineage, .json]
    ) { invocation in
        let lineage = try invocation.arguments.required(RegistryCommands.lineage)
        let change = try registry(invocation).rollback(lineage: lineage)
        if change.move != nil { RegistryExchangeCommands.updateActiveExport(lineage: lineage, invocation: invocation) }
        if invocation.arguments[.json] { Console.print(JSON.pretty(moveJSON(change))); return }
        Console.print("\(lineage): \(change.from?.name ?? "base") → \(change.to?.name ?? "base")")
    }

    static let history = Command(
        "registry history", summary: "list every move of the active pointer, oldest first",
        options: [lineage, .json]
    ) { invocation in
        let registry = try readingRegistry(invocation)
        let moves = try registry.history(lineage: try invocation.arguments[lineage])
        let names = Dictionary(uniqueKeysWithValues: try registry.versions().map { ($0.id, $0.name) })
        let rows = moves.map { m in
            MoveJSON(lineage: m.lineage.value, from: m.fromVersionID.flatMap { names[$0] }, to: m.toVersionID.flatMap { names[$0] },
                     reason: m.reason.rawValue, bypassed: m.bypassed, actor: m.actor.value, at: Timestamp.iso8601(m.at), changed: true)
        }
        if invocation.arguments[.json] { Console.print(JSON.pretty(rows)); return }
        var table = Table("AT", "LINEAGE", "FROM", "TO", "REASON", "BY", "BYPASSED")
        for r in rows { table.append([r.at, r.lineage, r.from ?? "base", r.to ?? "base", r.reason, r.actor, r.bypassed ?? ""]) }
        Console.print(table.render())
    }

    struct VerificationJSON: Encodable {
        let version: String
        let lineage: String
        let digest: String
        let state: String
    }

    static let verify = Command(
        "registry verify", summary: "rehash every adapter file; exit 1 if any is missing or corrupt",
        options: [lineage, .json]
    ) { invocation in
        let results = try readingRegistry(invocation).verify(lineage: try invocation.arguments[lineage])
        let rows = results.map {
            VerificationJSON(version: $0.version.name, lineage: $0.version.lineage.value, digest: $0.version.adapterDigest.hex, state: $0.state.rawValue)
        }
        if invocation.arguments[.json] {
            Console.print(JSON.pretty(rows))
        } else {
            var table = Table("LINEAGE", "VERSION", "DIGEST", "STATE")
            for r in rows { table.append([r.lineage, r.version, String(r.digest.prefix(12)), r.state]) }
            Console.print(table.render())
        }
        let bad = results.filter { $0.state != .ok }
        if !bad.isEmpty {
            Console.error("adapt: \(bad.count) of \(results.count) adapter files failed verification; restore them from a backup or re-run the train step")
            throw ExitCode.failure
        }
    }
}
