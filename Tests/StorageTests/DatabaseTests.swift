import AdaptCore
import Foundation
import Storage
import Testing
import TestSupport

@Test func opensInWALModeWithTheRequestedDurability() throws {
    let dir = TemporaryDirectory()
    let full = try Database(path: dir.file("a.sqlite").path)
    #expect(try full.scalar("PRAGMA journal_mode") == .text("wal"))
    #expect(try full.scalar("PRAGMA synchronous") == .integer(2))
    let normal = try Database(path: dir.file("b.sqlite").path, durability: .normal)
    #expect(try normal.scalar("PRAGMA synchronous") == .integer(1))
}

@Test func aNewDatabaseHasSmallPagesAndAnExistingOneKeepsItsOwn() throws {
    let dir = TemporaryDirectory()
    let fresh = try Database(path: dir.file("new.sqlite").path)
    #expect(try fresh.scalar("PRAGMA page_size") == .integer(1024))
    let old = dir.file("old.sqlite").path
    do {
        let created = try Database(path: old, pageSize: 4096)
        try created.execute("CREATE TABLE keep (x TEXT); INSERT INTO keep VALUES ('row')")
    }
    let reopened = try Database(path: old)
    #expect(try reopened.scalar("PRAGMA page_size") == .integer(4096))
    #expect(try reopened.scalar("SELECT x FROM keep") == .text("row"))
}

@Test func bindsAndReadsBackEveryType() throws {
    let dir = TemporaryDirectory()
    let db = try Database(path: dir.file("t.sqlite").path)
    try db.execute("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n TEXT)")
    try db.run("INSERT INTO t VALUES (?, ?, ?, ?, ?)", 42, 0.5, "héllo", Data([0, 1, 2]), Optional<String>.none)
    let row = try #require(try db.queryOne("SELECT * FROM t"))
    #expect(row.int("i") == 42)
    #expect(row.double("r") == 0.5)
    #expect(row.string("s") == "héllo")
    #expect(row.data("b") == Data([0, 1, 2]))
    #expect(row["n"] == .null)
}

@Test func aThrowingTransactionLeavesNothingBehind() throws {
    let dir = TemporaryDirectory()
    let db = try Database(path: dir.file("t.sqlite").path)
    try db.execute("CREATE TABLE t (x INTEGER)")
    struct Boom: Error {}
    #expect(throws: Boom.self) {
        try db.transaction {
            try db.run("INSERT INTO t VALUES (1)")
            _ = try db.transaction { try db.run("INSERT INTO t VALUES (2)") }
            throw Boom()
        }
    }
    #expect(try db.scalar("SELECT count(*) FROM t") == .integer(0))
}

@Test func errorsCarrySQLitesCodeAndTheStatementButNoValues() throws {
    let dir = TemporaryDirectory()
    let db = try Database(path: dir.file("t.sqlite").path)
    try db.execute("CREATE TABLE t (x TEXT UNIQUE)")
    try db.run("INSERT INTO t VALUES (?)", "secret-value")
    do {
        try db.run("INSERT INTO t VALUES (?)", "secret-value")
        Issue.record("expected a constraint error")
    } catch let error as StorageError {
        #expect(error.isConstraintViolation)
        #expect(error.description.contains("INSERT INTO t"))
        #expect(!error.description.contains("secret-value"))
    }
}

@Test func refusesAFileThatIsNotSQLiteWithoutTouchingIt() throws {
    let dir = TemporaryDirectory()
    let path = dir.file("junk.sqlite")
    let junk = Data(String(repeating: "this is not a database\n", count: 100).utf8)
    try junk.write(to: path)
    #expect(throws: StorageError.notADatabase(path: path.path)) { try Database(path: path.path) }
    #expect(try Data(contentsOf: path) == junk)
}

@Test func migrationsApplyOnceAndANewerDatabaseIsRefused() throws {
    let dir = TemporaryDirectory()
    let path = dir.file("m.sqlite").path
    let v1 = Schema(component: "things", migrations: ["CREATE TABLE things (id INTEGER PRIMARY KEY)"])
    let v2 = Schema(component: "things", migrations: v1.migrations + ["ALTER TABLE things ADD COLUMN name TEXT"])
    let other = Schema(component: "others", migrations: ["CREATE TABLE others (id INTEGER)"])
    do {
        let db = try Database(path: path)
        try db.migrate(v1)
        try db.migrate(v1)
        try db.migrate(other)
        try db.migrate(v2)
        #expect(try db.schemaVersion(of: "things") == 2)
        #expect(try db.scalar("PRAGMA user_version") == .integer(3))
    }
    let db = try Database(path: path)
    #expect(throws: StorageError.newerSchema(path: path, component: "things", found: 2, known: 1)) { try db.migrate(v1) }
    try db.execute("PRAGMA user_version = 99")
    #expect(throws: StorageError.self) { try db.migrate(v2) }
    #expect(try db.schemaVersion(of: "things") == 2)
}

@Test func anotherProgramsDatabaseIsRefusedAndLeftAsItWas() throws {
    let dir = TemporaryDirectory()
    let path = dir.file("theirs.sqlite").path
    do {
        let theirs = try Database(path: path)
        try theirs.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers VALUES (1, 'a')")
    }
    let db = try Database(path: path)
    let schema = Schema(component: "things", migrations: ["CREATE TABLE things (id INTEGER PRIMARY KEY)"])
    #expect(throws: StorageError.foreignDatabase(path: path, tables: ["customers"])) { try db.migrate(schema) }
    #expect(try db.query("SELECT name FROM sqlite_schema").compactMap { $0.string("name") } == ["customers"])
}

@Test func aReadOnlyDatabaseSaysSoAndHowToFixIt() throws {
    let dir = TemporaryDirectory()
    let path = dir.file("ro.sqlite").path
    try Database(path: path).execute("CREATE TABLE t (x)")
    let readOnly = try Database(path: path)
    // Root ignores file permissions, so the connection itself is made read-only.
    try readOnly.execute("PRAGMA query_only = ON")
    #expect(throws: StorageError.self) { try readOnly.run("INSERT INTO t VALUES (1)") }
    do {
        try readOnly.run("INSERT INTO t VALUES (1)")
    } catch let error as StorageError {
        #expect(error == .readOnly(path: path, message: "attempt to write a readonly database"))
        #expect(error.description.contains("--state with a writable directory"))
    }
}

@Test func dataVersionMovesWhenAnotherConnectionCommits() throws {
    let dir = TemporaryDirectory()
    let path = dir.file("d.sqlite").path
    let watcher = try Database(path: path)
    let writer = try Database(path: path)
    try writer.execute("CREATE TABLE t (x INTEGER)")
    let before = try watcher.dataVersion()
    try writer.run("INSERT INTO t VALUES (1)")
    #expect(try watcher.dataVersion() != before)
}
