import AdaptCore

/// One finished job for a group commit (`JobEngine.complete(_:thenClaim:)`): its claim and output, whether the
/// slot that ran it wants the next job, and what else its transaction writes, in the engine's own connection
/// (`Database` or `PostgresConnection`).
public struct JobCompletion<Connection>: Sendable {
    public let claim: Claim
    public let output: JSONValue
    /// Whether the slot that ran it wants the next job.
    public let claimNext: Bool
    public let alsoInTransaction: (@Sendable (Connection) throws -> Void)?

    public init(claim: Claim, output: JSONValue, claimNext: Bool,
                alsoInTransaction: (@Sendable (Connection) throws -> Void)? = nil) {
        self.claim = claim
        self.output = output
        self.claimNext = claimNext
        self.alsoInTransaction = alsoInTransaction
    }
}
