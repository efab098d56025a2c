import Foundation
import Storage
import Testing
import TestSupport

// `Database(readingAt:)`: what commands that only read open. These tests run as root too, where permissions do
// not stop a write: what they check is that the read-only open itself creates and changes no file.

/// Every entry of `directory` with its size and modification time, to prove nothing was created or changed.
private func listing(_ directory: URL) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted().map { name in
        var info = stat()
        _ = stat(directory.appendingPathComponent(name).path, &info)
        return "\(name) \(info.st_size) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec) \(String(info.st_mode, radix: 8))"
    }
}

private func setWritable(_ url: URL, _ writable: Bool) {
    _ = chmod(url.path, writable ? 0o755 : 0o555)
}

private let schema = Schema(component: "notes", migrations: [
    "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL) STRICT",
    "ALTER TABLE notes ADD COLUMN tag TEXT",
])

/// A closed database with the component at `version` and one row.
private func makeDatabase(in dir: TemporaryDirectory, version: Int = 2) throws -> String {
    let path = dir.file("state.sqlite").path
    let db = try Database(path: path)
    try db.migrate(Schema(component: schema.component, migrations: Array(schema.migrations.prefix(version))))
    try db.run("INSERT INTO notes (body) VALUES (?)", "kept")
    return path
}

@Test func aReadOnlyOpenOfAReadOnlyDirectoryReadsEverythingAndCreatesNothing() throws {
    let dir = TemporaryDirectory()
    let path = try makeDatabase(in: dir)
    setWritable(dir.url, false)
    defer { setWritable(dir.url, true) }
    let before = try listing(dir.url)
    do {
        let db = try Database(readingAt: path)
        #expect(db.isReadOnly)
        try db.migrate(schema)
        #expect(try db.scalar("SELECT body FROM notes") == .text("kept"))
        #expect(throws: StorageError.self) { try db.run("INSERT INTO notes (body) VALUES ('no')") }
    }
    #expect(try listing(dir.url) == before, "the read-only open created or changed a file")
}

@Test func aReadOnlyOpenBesideAWriterSeesItsCommitsAndLeavesTheDatabaseFileAlone() throws {
    let dir = TemporaryDirectory()
    let path = try makeDatabase(in: dir)
    let writer = try Database(path: path)
    try writer.migrate(schema)
    let reader = try Database(readingAt: path)
    try reader.migrate(schema)
    try writer.run("INSERT INTO notes (body) VALUES ('second')")
    #expect(try reader.scalar("SELECT count(*) FROM notes") == .integer(2))
    #expect(throws: StorageError.self) { try reader.run("DELETE FROM notes") }
    #expect(try writer.scalar("SELECT count(*) FROM notes") == .integer(2))
}

@Test func aReadOnlyOpenNeverMigratesAnOlderSchemaAndSaysToWriteFirst() throws {
    let dir = TemporaryDirectory()
    let path = try makeDatabase(in: dir, version: 1)
    let before = try listing(dir.url)
    let db = try Database(readingAt: path)
    #expect(throws: StorageError.olderSchema(path: path, component: "notes", found: 1, known: 2)) { try db.migrate(schema) }
    #expect(StorageError.olderSchema(path: path, component: "notes", found: 1, known: 2).description
        .contains("run a command that writes to this state first"))
    #expect(try db.schemaVersion(of: "notes") == 1)
    #expect(try listing(dir.url).filter { $0.hasPrefix("state.sqlite ") } == before.filter { $0.hasPrefix("state.sqlite ") })
    #expect(try Database(path: path).schemaVersion(of: "notes") == 1, "the read-only open upgraded the schema")
}

@Test func aComponentTheDatabaseNeverHadReadsAsEmptyWhenOpenedReadOnly() throws {
    let dir = TemporaryDirectory()
    let path = try makeDatabase(in: dir)
    let db = try Database(readingAt: path)
    try db.migrate(schema)
    let other = Schema(component: "other", migrations: ["CREATE TABLE others (id INTEGER PRIMARY KEY) STRICT"])
    try db.migrate(other)
    #expect(try db.scalar("SELECT count(*) FROM others") == .integer(0))
    #expect(try Database(path: path).schemaVersion(of: "other") == 0, "the stand-in reached the file")
}

@Test func aReadOnlyOpenOfAMissingFileCreatesNothing() throws {
    let dir = TemporaryDirectory()
    let path = dir.file("absent.sqlite").path
    #expect(throws: StorageError.noDatabase(path: path)) { try Database(readingAt: path) }
    #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
}
