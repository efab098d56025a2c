import Foundation
@testable import Services
import Storage
import Testing
import TestSupport

@Suite struct TableDigestTests {
    let database: Database
    let directory = TemporaryDirectory("table-digest")

    init() throws {
        database = try Database(path: directory.file("digest.sqlite").path)
    }

    private func digest(_ sql: String) throws -> TableDigest {
        TableDigest(rows: try database.query(sql), columns: ["a", "b"])
    }

    @Test func rowOrderDoesNotChangeTheDigest() throws {
        let forward = try digest("SELECT 1 AS a, 'x' AS b UNION ALL SELECT 2, 'y'")
        let backward = try digest("SELECT 2 AS a, 'y' AS b UNION ALL SELECT 1, 'x'")
        #expect(forward.digest == backward.digest)
        #expect(forward.rows == 2)
    }

    @Test func anyChangedValueOrTypeChangesTheDigest() throws {
        let variants = [
            "SELECT 1 AS a, 'x' AS b",
            "SELECT 1 AS a, 'X' AS b",
            "SELECT 1.0 AS a, 'x' AS b",
            "SELECT '1' AS a, 'x' AS b",
            "SELECT 1 AS a, X'78' AS b",
            "SELECT 1 AS a, '' AS b",
            "SELECT 1 AS a, NULL AS b",
            "SELECT 1 AS a, 'x' AS b UNION ALL SELECT 1, 'x'",
            // Lengths are encoded, so moving a byte from one value to the next is a different row.
            "SELECT 'xy' AS a, 'z' AS b",
            "SELECT 'x' AS a, 'yz' AS b",
        ]
        let digests = try variants.map { try digest($0).digest }
        #expect(Set(digests).count == variants.count)
    }
}
