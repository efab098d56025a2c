import AdaptCore
import JobQueue
import Storage

/// Where the commands that read recorded runs (`run export`, `replay`, `report`) find them: the
/// job tables, the database that holds them (erasure records, the registry) and the blobs the runs name. On
/// SQLite all three are the state directory's; on PostgreSQL they are the server's, blobs in its `blobs` table.
public struct RecordedRuns: Sendable {
    let queue: any JobEngine
    let connection: any SQLConnection
    let blobs: any BlobStorage

    /// The runs of the state directory's `database`, with the blob files of `blobs`.
    public init(database: Database, blobs: BlobStore) throws {
        queue = try JobQueue(database: database)
        connection = database
        self.blobs = blobs
    }

    /// The runs of the PostgreSQL database `connectionString` names, with the blobs stored in it.
    public init(postgres connectionString: String) throws {
        let queue = try PostgresJobQueue(connectionString: connectionString)
        self.queue = queue
        connection = queue.connection
        blobs = try PostgresBlobStore(connection: queue.connection)
    }
}
