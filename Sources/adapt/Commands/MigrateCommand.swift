import AdaptCore
import CommandLineKit
import Foundation
import Services

/// `adapt migrate`: copy a whole state between a state directory and PostgreSQL (`StateMigration`).
enum MigrateCommand {
    static let all: [Command] = [migrate]

    static let migrate = Command(
        "migrate", summary: "copy a whole state between a state directory and a PostgreSQL database",
        discussion: """
            One of --from and --to is a state directory, the other a postgres:// URL. Copies the job engine's tables
            (runs, jobs, dependencies, events), the replay buffer, the adapter registry and the blobs, then compares a
            digest per table (and over the blobs) on both sides. The target must hold no adapt data: a new database (or
            one whose adapt tables are empty), a new or empty directory. Nothing is written to the target unless the
            whole copy matched: the database copy is one transaction, a directory is built beside its place and
            renamed into it. Stop workers first; the source is read as one snapshot and never changed. Models are
            not copied.
            --json prints {from, to, matched, components: [{component, rows, source_digest, target_digest, matched,
            tables: [{table, source_rows, target_rows, source_digest, target_digest, matched}]}],
            blobs: {count, bytes, source_digest, target_digest, matched}}.
            """,
        options: [from, to, .json]
    ) { invocation in
        let a = invocation.arguments
        // The two states are --from and --to: a global --state or --database would name a third, silently unused.
        for option in ["state", "database"] where invocation.global.string(option) != nil {
            throw UsageError("migrate copies from --from to --to and takes no --\(option); drop it")
        }
        guard let source = try a[from] else { throw UsageError("--from DIR|URL is required") }
        guard let target = try a[to] else { throw UsageError("--to DIR|URL is required") }
        let report = try StateMigration.run(from: .init(source), to: .init(target))
        if a[.json] { Console.print(JSON.pretty(report)); return }
        for component in report.components {
            Console.print("\(component.component): \(component.rows) rows in \(component.tables.count) tables, digests match")
        }
        Console.print("blobs: \(report.blobs.count) (\(report.blobs.bytes) bytes), digests match")
        Console.print("copied \(TerminalText.escaped(report.from)) to \(TerminalText.escaped(report.to))")
    }

    static let from = endpoint("from", help: "the state to copy: a state directory or a postgres:// URL")
    static let to = endpoint("to", help: "where to copy it: a new or empty state directory, or a postgres:// URL of an empty database")

    private static func endpoint(_ name: String, help: String) -> Option<String?> {
        Option<String?>(name, value: "DIR|URL", default: nil, help: help) { text in
            guard !text.isEmpty else { throw UsageError("must name a directory or a postgres:// URL") }
            // Taken for a path, a key=value connection string or another scheme's URL would become a directory
            // named after its password.
            guard !GlobalOptions.isKeyValueConnectionString(text) else {
                throw UsageError("takes a postgres:// URL, not a libpq key=value string (not shown, as it may hold a password)")
            }
            if text.contains("://"), !text.hasPrefix("postgres://"), !text.hasPrefix("postgresql://") {
                throw UsageError("takes a state directory or a postgres:// URL; the URL given has another scheme (not shown, as it may hold a password)")
            }
            return text
        }
    }
}
