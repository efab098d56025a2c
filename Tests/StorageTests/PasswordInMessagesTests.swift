import AdaptCore
import Foundation
import Storage
import Testing
import TestSupport

/// No message, log or event holds a password (DESIGN.md, Privacy), whatever shape the connection string has:
/// ones libpq cannot parse (and echoes), passwords holding URL delimiters, query parameters, libpq's key=value
/// form, and strings that are no PostgreSQL URL at all. Nothing here needs a running server: every target is
/// malformed or refuses at once (port 1).
@Suite struct PasswordInMessagesTests {
    /// A connection string and the texts of its password that must appear nowhere (the whole password, and the
    /// pieces a parser cuts it into).
    struct Shape: Sendable, CustomStringConvertible {
        let text: String
        let secrets: [String]
        var description: String { secrets[0] }
    }

    static let shapes: [Shape] = [
        Shape(text: "postgres://u:UnclosedSecret@[::1", secrets: ["UnclosedSecret"]),
        Shape(text: "postgres://u:BadEscapeSecret%zz@127.0.0.1:1/db", secrets: ["BadEscapeSecret"]),
        Shape(text: "postgres://u:At@SignSecret@127.0.0.1:1/db", secrets: ["At@SignSecret", "SignSecret"]),
        Shape(text: "postgres://u:Slash/PartSecret@127.0.0.1:1/db", secrets: ["Slash/PartSecret", "PartSecret", "Slash"]),
        Shape(text: "postgresql://u:PlainSecret@127.0.0.1:1/db?connect_timeout=2", secrets: ["PlainSecret"]),
        Shape(text: "postgres://u@127.0.0.1:1/db?password=QuerySecret&sslmode=disable", secrets: ["QuerySecret"]),
        Shape(text: "postgres://u@127.0.0.1:1/db?password=Amp&ersandSecret", secrets: ["Amp&ersandSecret", "ersandSecret"]),
        Shape(text: "host=127.0.0.1 port=1 password=KeyValueSecret", secrets: ["KeyValueSecret"]),
        Shape(text: "password='Quoted Secret' host=127.0.0.1", secrets: ["Quoted Secret", "Quoted"]),
        Shape(text: "mysql://u:OtherSchemeSecret@127.0.0.1/db", secrets: ["OtherSchemeSecret"]),
        Shape(text: "PGPASSWORD=EnvironmentStyleSecret", secrets: ["EnvironmentStyleSecret"]),
    ]

    /// The command lines that take a connection string: as `--database`, as `ADAPT_DATABASE`, as `migrate --to`,
    /// and misplaced as a positional argument.
    static func attempts(_ shape: Shape, state: String) -> [(arguments: [String], environment: [String: String])] {
        let clean = ["ADAPT_DATABASE": "", "ADAPT_STATE": ""]
        return [
            (["--state", state, "--database", shape.text, "jobs"], clean),
            (["--state", state, "--database", shape.text, "enqueue", "noop"], clean),
            (["--state", state, "--database", shape.text, "data", "list"], clean),
            (["--state", state, "runs"], ["ADAPT_DATABASE": shape.text, "ADAPT_STATE": ""]),
            (["migrate", "--from", state, "--to", shape.text], clean),
            (["--state", state, "jobs", shape.text], clean),
        ]
    }

    @Test(arguments: shapes)
    func aPasswordReachesNoOutputAndNoEventWhateverTheConnectionStringsShape(shape: Shape) async throws {
        let directory = TemporaryDirectory("adapt-secrets")
        let state = directory.state.root.path
        let created = try await Executables.runAsync("adapt", ["--state", state, "enqueue", "noop"], environment: ["ADAPT_DATABASE": ""])
        #expect(created.status == 0, "\(created.stderr)")
        for attempt in Self.attempts(shape, state: state) {
            let result = try await Executables.runAsync("adapt", attempt.arguments, environment: attempt.environment)
            #expect(result.status != 0, "\(attempt.arguments) succeeded")
            for secret in shape.secrets {
                #expect(!result.stderr.contains(secret) && !result.stdout.contains(secret),
                        "\(attempt.arguments) printed '\(secret)': \(result.stderr)")
            }
        }
        let events = try await Executables.runAsync("adapt", ["--state", state, "events", "--json"], environment: ["ADAPT_DATABASE": ""])
        #expect(events.status == 0, "\(events.stderr)")
        for secret in shape.secrets { #expect(!events.stdout.contains(secret), "an event holds '\(secret)'") }
    }

    @Test(arguments: shapes)
    func theShownFormAndScrubbedMessagesHoldNoPieceOfThePassword(shape: Shape) {
        let redaction = ConnectionStringRedaction(shape.text, environment: [:])
        // libpq's messages repeat the whole string, or the piece it choked on.
        let echoes = ["in URI: \"\(shape.text)\""] + shape.secrets.map { "could not translate host name \"\($0)@127.0.0.1\"" }
        for secret in shape.secrets {
            #expect(!redaction.display.contains(secret), "\(redaction.display)")
            #expect(!PostgresConnection.redacted(shape.text).contains(secret))
            for echo in echoes { #expect(!redaction.scrubbed(echo).contains(secret), "\(redaction.scrubbed(echo))") }
        }
    }

    @Test func theShownFormKeepsTheUserHostAndDatabase() {
        #expect(PostgresConnection.redacted("postgres://adapt:p@ss@db.example:5433/nightly") == "postgres://adapt:***@db.example:5433/nightly")
        #expect(PostgresConnection.redacted("postgres://adapt@db.example/nightly") == "postgres://adapt@db.example/nightly")
        #expect(PostgresConnection.redacted("host=db.example password=s3cret dbname=nightly") == "host=db.example password=*** dbname=nightly")
    }

    @Test func aPasswordFromPGPASSWORDIsScrubbedToo() {
        let redaction = ConnectionStringRedaction("postgres://u@127.0.0.1:1/db", environment: ["PGPASSWORD": "FromEnvironmentSecret"])
        #expect(!redaction.scrubbed("server said FromEnvironmentSecret").contains("FromEnvironmentSecret"))
    }
}
