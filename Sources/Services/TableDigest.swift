import AdaptCore
import Foundation
import Storage

/// A digest of a table's rows that is the same on SQLite and PostgreSQL when the rows are.
///
/// Each row is encoded column by column in the order of `columns` (a type tag, then the value: integers as 8
/// big-endian bytes, reals as their IEEE-754 bits, text and bytes with an 8-byte length). The encoded rows are
/// sorted by their bytes, so neither the database's row order nor its collation reaches the digest, and hashed
/// after the row count.
struct TableDigest {
    let rows: Int
    let digest: Digest

    init(rows: [Row], columns: [String]) {
        let encoded = rows.map { row in Self.encode(row, columns: columns) }.sorted { $0.lexicographicallyPrecedes($1) }
        var all = Data()
        Self.append(UInt64(encoded.count), to: &all)
        for row in encoded {
            Self.append(UInt64(row.count), to: &all)
            all.append(row)
        }
        self.rows = rows.count
        digest = Digest.sha256(all)
    }

    private static func encode(_ row: Row, columns: [String]) -> Data {
        var data = Data()
        for column in columns {
            switch row[column] {
            case .null:
                data.append(UInt8(ascii: "n"))
            case let .integer(value):
                data.append(UInt8(ascii: "i"))
                append(UInt64(bitPattern: value), to: &data)
            case let .real(value):
                data.append(UInt8(ascii: "r"))
                append(value.bitPattern, to: &data)
            case let .text(value):
                data.append(UInt8(ascii: "t"))
                append(UInt64(value.utf8.count), to: &data)
                data.append(contentsOf: value.utf8)
            case let .blob(value):
                data.append(UInt8(ascii: "b"))
                append(UInt64(value.count), to: &data)
                data.append(value)
            }
        }
        return data
    }

    private static func append(_ value: UInt64, to data: inout Data) {
        withUnsafeBytes(of: value.bigEndian) { data.append(contentsOf: $0) }
    }
}
