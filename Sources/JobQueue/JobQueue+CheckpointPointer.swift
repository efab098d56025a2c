import AdaptCore
import Storage

/// The checkpoint pointer of a resumable step: an opaque JSON value its body records (the train step records
/// which blobs hold its newest checkpoints) and whoever runs the job next reads to resume.
///
/// One per job, whatever the attempt that wrote it: a worker that claims a job another worker lost reads the
/// pointer that worker left. Writes are fenced like every other write of a lease holder (`LeaseFence`), so a
/// worker that lost its lease cannot move it. Stored in `jobs.checkpoint_pointer` (`JobSchema.version4`).
extension JobQueue {
    /// Replaces the job's checkpoint pointer, or throws `leaseLost` and changes nothing.
    public func recordCheckpointPointer(_ claim: Claim, _ pointer: JSONValue) throws {
        let now = self.now
        try database.transaction {
            let changed = try database.run("""
                UPDATE jobs SET checkpoint_pointer = ? WHERE \(LeaseFence.sql())
                """, arguments: [JobJSON.canonicalString(pointer)] + LeaseFence(claim: claim, now: now).arguments)
            guard changed == 1 else { throw JobQueueError.leaseLost(claim.jobID, token: claim.token) }
        }
    }

    /// The job's checkpoint pointer; nil when no attempt recorded one.
    public func checkpointPointer(job: JobID) throws -> JSONValue? {
        guard let row = try database.queryOne("SELECT checkpoint_pointer FROM jobs WHERE id = ?", job) else {
            throw JobQueueError.unknownJob(job)
        }
        return try row.string("checkpoint_pointer").map { try JobJSON.decode($0, context: "the checkpoint pointer of \(job)") }
    }

    /// The text that began a checkpoint-pointer progress event before the pointer had its column.
    static let pointerEventPrefix = "checkpoints: "

    /// The checkpoint pointers of the jobs that may still run (pending, ready, running or failed): what their
    /// next attempt resumes from. Reads `database` as it is, without migrating it: in one an older build wrote
    /// and nothing has migrated since (`adapt gc --dry-run` on a read-only state), the pointers are still the
    /// newest `checkpoints: ` event of each job, and are read from there.
    public static func unfinishedCheckpointPointers(in database: Database) throws -> [JobID: JSONValue] {
        let hasColumn = try database.scalar("SELECT count(*) FROM pragma_table_info('jobs') WHERE name = 'checkpoint_pointer'")
            .integerValue == 1
        let rows = hasColumn
            ? try database.query("""
                SELECT id AS job_id, checkpoint_pointer AS pointer FROM jobs
                WHERE checkpoint_pointer IS NOT NULL AND state IN (\(JobState.sqlList(JobState.unfinished)))
                """)
            : try database.query("""
                SELECT e.job_id, substr(e.message, ?) AS pointer FROM job_events e
                WHERE e.id IN (SELECT max(p.id) FROM job_events p JOIN jobs j ON j.id = p.job_id
                               WHERE j.state IN (\(JobState.sqlList(JobState.unfinished))) AND substr(p.message, 1, ?) = ?
                               GROUP BY p.job_id)
                """, pointerEventPrefix.utf8.count + 1, pointerEventPrefix.utf8.count, pointerEventPrefix)
        var pointers: [JobID: JSONValue] = [:]
        for row in rows {
            // An old pointer event that does not parse points at nothing (the migration does not carry it over).
            guard let id = row.int64("job_id"), let text = row.string("pointer"),
                  let pointer = try? JobJSON.decode(text, context: "the checkpoint pointer of \(JobID(id))") else { continue }
            pointers[JobID(id)] = pointer
        }
        return pointers
    }
}
