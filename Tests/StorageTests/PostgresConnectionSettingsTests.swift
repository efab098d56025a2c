import Storage
import Testing
import TestSupport

/// A link that vanishes silently must end a statement within seconds, not the kernel's quarter of an hour, so every
/// connection carries timeouts and keepalives unless its connection string says otherwise.
@Suite struct PostgresConnectionSettingsTests {
    @Test func everyConnectionGetsTimeoutsAndKeepalivesByDefault() throws {
        let connection = try PostgresConnection(try PostgresCluster.shared().makeDatabase())
        #expect(connection.setting("tcp_user_timeout") == "10000")
        #expect(connection.setting("keepalives") == "1")
        #expect(connection.setting("keepalives_idle") == "10")
        #expect(connection.setting("keepalives_interval") == "5")
        #expect(connection.setting("keepalives_count") == "3")
    }

    @Test func aConnectionStringOverridesTheDefaultsInEitherForm() throws {
        let cluster = try PostgresCluster.shared()
        let url = try cluster.makeDatabase()
        let fromURL = try PostgresConnection(url + "&tcp_user_timeout=2000&keepalives_idle=30")
        #expect(fromURL.setting("tcp_user_timeout") == "2000")
        #expect(fromURL.setting("keepalives_idle") == "30")
        #expect(fromURL.setting("connect_timeout") == "10")
        let database = String(url.split(separator: "/").last!.split(separator: "?").first!)
        let keyValue = try PostgresConnection("host=127.0.0.1 port=\(cluster.port) user=adapt dbname=\(database) tcp_user_timeout=3000")
        #expect(keyValue.setting("tcp_user_timeout") == "3000")
        #expect(keyValue.setting("keepalives_count") == "3")
        #expect(try keyValue.scalar("SELECT current_database()") == .text(database))
    }
}
