extension JobSchema {
    /// A column for the checkpoint pointer of a resumable step (the train step's: which blobs hold its newest
    /// checkpoints), replaced by fenced writes (`JobQueue.recordCheckpointPointer`).
    ///
    /// Until now the pointer was a progress event, `checkpoints: [{"digest", "step"}, …]`, and the newest such
    /// event of a job was read back by parsing its text. The migration copies each job's newest one into the
    /// column, so a step that was interrupted under the old layout resumes from the same checkpoint; the events
    /// stay as history. A pointer event that is not valid JSON (no build wrote one) is not copied: that step
    /// trains from its start, which ends with the same adapter. `ADD COLUMN` leaves the rows and every other rule
    /// as they are.
    static let version4 = """
    ALTER TABLE jobs ADD COLUMN checkpoint_pointer TEXT
        CHECK (checkpoint_pointer IS NULL OR json_valid(checkpoint_pointer));

    UPDATE jobs SET checkpoint_pointer = newest.pointer
    FROM (SELECT job_id, substr(message, 14) AS pointer, max(id) FROM job_events
          WHERE substr(message, 1, 13) = 'checkpoints: ' GROUP BY job_id) AS newest
    WHERE newest.job_id = jobs.id AND json_valid(newest.pointer);
    """
}
