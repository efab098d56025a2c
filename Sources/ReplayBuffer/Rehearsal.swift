import Storage

extension SQLConnection {
    /// Runs `body` in a transaction that is always rolled back, and returns what it computed: what a step's
    /// writes would do, measured without doing them. A step body rehearses; the writes themselves run again
    /// in its job's fenced completion transaction, so a worker that lost its lease leaves nothing behind.
    func rehearse<T>(_ body: () throws -> T) throws -> T {
        var result: T?
        do {
            try replayTransaction {
                result = try body()
                throw Rehearsed()
            }
        } catch is Rehearsed {}
        guard let result else { preconditionFailure("a rehearsal that did not throw has a result") }
        return result
    }
}

private struct Rehearsed: Error {}
