import Storage
import Testing
import TestSupport

/// A worker's slots and its heartbeat share one connection and may meet the same break together: the one that
/// reopens it first must not have its fresh session reset by the other.
@Suite struct PostgresReconnectTests {
    @Test func reconnectingIfBrokenLeavesAWorkingSessionAlone() throws {
        let connection = try PostgresConnection(try PostgresCluster.shared().makeDatabase())
        let session = try connection.scalar("SELECT pg_backend_pid()")
        try connection.reconnectIfBroken()
        #expect(try connection.scalar("SELECT pg_backend_pid()") == session)
    }

    @Test func reconnectingIfBrokenOpensANewSessionAfterTheServerEndedTheOldOne() throws {
        let target = try PostgresCluster.shared().makeDatabase()
        let connection = try PostgresConnection(target)
        let session = try connection.scalar("SELECT pg_backend_pid()")
        let administrator = try PostgresConnection(target)
        try administrator.run("SELECT pg_terminate_backend($1::integer)", session)
        #expect(throws: StorageError.self) { try connection.scalar("SELECT 1") }
        #expect(!connection.isConnected)
        try connection.reconnectIfBroken()
        #expect(connection.isConnected)
        #expect(try connection.scalar("SELECT pg_backend_pid()") != session)
    }
}
