/// What a follower of the event stream has been handed so far (`JobEngine.tail(run:job:after:limit:)`).
///
/// On SQLite, with one writer, ids become visible in order and the last id handed out is the whole story. On
/// PostgreSQL an event with a lower id can commit after one with a higher id, so the stream is read in windows
/// of transactions that have all ended: `settledBefore` is where the next window starts, and a window larger
/// than a page is read page by page in id order.
public struct EventCursor: Sendable, Hashable {
    /// The last event handed out (on PostgreSQL, of the window being read; 0 between windows).
    var lastID: Int64 = 0
    /// PostgreSQL: every event written by a transaction below this id has been handed out.
    var settledBefore: Int64 = 0
    /// PostgreSQL: the end of the window being read page by page; nil between windows.
    var windowEnd: Int64? = nil

    /// Before the first event.
    public init() {}

    init(lastID: Int64, settledBefore: Int64, windowEnd: Int64?) {
        self.lastID = lastID
        self.settledBefore = settledBefore
        self.windowEnd = windowEnd
    }
}

/// A page of the event stream and the cursor after it.
public struct EventPage: Sendable {
    /// In id order.
    public let events: [EventRecord]
    public let next: EventCursor
}
