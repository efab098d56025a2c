import Storage

/// The condition every write of a lease holder is fenced by, written once: the job is still running under the
/// claim's token (its attempt) and its lease has not expired. A rescue or a re-claim moves the state or the
/// attempt, so a holder that lost its lease matches no row and its statement changes nothing.
///
/// The rescuer's own writes (`takeBack`) are fenced differently, by the owner it read, since the lease they
/// take back has expired by definition.
struct LeaseFence {
    let claim: Claim
    let now: Int64

    /// The condition on the jobs table, called `table` in the statement; bind `arguments` at its place.
    static func sql(_ table: String = "jobs") -> String {
        "\(table).id = ? AND \(table).attempt = ? AND \(table).state = 'running' AND \(table).lease_expires_at >= ?"
    }

    /// The values of `sql`'s placeholders, in order.
    var arguments: [SQLBindable] { [claim.jobID, claim.token, now] }
}
