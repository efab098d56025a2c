import Storage
import Testing
import TestSupport

/// A connection prepares a statement the second time it runs it in a session, and runs it by name afterwards.
@Suite struct PostgresPreparedStatementTests {
    private func preparedCount(_ connection: PostgresConnection) throws -> Int64? {
        try connection.scalar("SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'adapt_%'").integerValue
    }

    @Test func aRepeatedStatementIsPreparedOnceAndBindsItsValuesEachTime() throws {
        let connection = try PostgresConnection(try PostgresCluster.shared().makeDatabase())
        try connection.execute("CREATE TABLE notes (id bigint, body text)")
        for id in 1...5 { try connection.run("INSERT INTO notes VALUES ($1, $2)", id, "note \(id)") }
        #expect(try connection.scalar("SELECT body FROM notes WHERE id = $1", 4) == .text("note 4"))
        #expect(try connection.scalar("SELECT body FROM notes WHERE id = $1", 2) == .text("note 2"))
        #expect(try preparedCount(connection) == 2, "the insert and the select; the count has run once")
        #expect(try preparedCount(connection) == 3, "and now the count")
        // The same text with a null where a number was binds with another parameter type: a statement of its own.
        try connection.run("INSERT INTO notes VALUES ($1, $2)", 6, nil as String?)
        try connection.run("INSERT INTO notes VALUES ($1, $2)", 7, nil as String?)
        #expect(try connection.scalar("SELECT count(*) FROM notes WHERE body IS NULL") == .integer(2))
        #expect(try preparedCount(connection) == 4)
    }

    @Test func aStatementRunOnceIsNotPrepared() throws {
        let connection = try PostgresConnection(try PostgresCluster.shared().makeDatabase())
        for value in 1...5 { _ = try connection.scalar("SELECT \(value) + $1::bigint", 1) }
        #expect(try preparedCount(connection) == 0)
    }

    @Test func statementsRunAgainAfterTheSessionIsReopened() throws {
        let target = try PostgresCluster.shared().makeDatabase()
        let connection = try PostgresConnection(target)
        #expect(try connection.scalar("SELECT $1::bigint + 1", 41) == .integer(42))
        #expect(try connection.scalar("SELECT $1::bigint + 1", 41) == .integer(42))
        let session = try connection.scalar("SELECT pg_backend_pid()")
        try PostgresConnection(target).run("SELECT pg_terminate_backend($1::integer)", session)
        #expect(throws: StorageError.self) { try connection.scalar("SELECT 1") }
        try connection.reconnectIfBroken()
        #expect(try connection.scalar("SELECT $1::bigint + 1", 41) == .integer(42))
    }

    @Test func aStatementWhoseResultTypeChangedElsewhereIsPreparedAgain() throws {
        let target = try PostgresCluster.shared().makeDatabase()
        let connection = try PostgresConnection(target)
        try connection.execute("CREATE FUNCTION shape(n bigint) RETURNS TABLE (a bigint) LANGUAGE sql AS 'SELECT n'")
        #expect(try connection.query("SELECT * FROM shape($1)", 7).first?["a"] == .integer(7))
        #expect(try connection.query("SELECT * FROM shape($1)", 7).first?["a"] == .integer(7), "now prepared")
        let other = try PostgresConnection(target)
        try other.execute("""
            DROP FUNCTION shape(bigint);
            CREATE FUNCTION shape(n bigint) RETURNS TABLE (a bigint, b bigint) LANGUAGE sql AS 'SELECT n, n + 1'
            """)
        // The server may refuse the old plan once ("cached plan must not change result type"); after that the
        // statement is prepared again and reads the new shape.
        _ = try? connection.query("SELECT * FROM shape($1)", 7)
        #expect(try connection.query("SELECT * FROM shape($1)", 7).first?["b"] == .integer(8))
    }
}
