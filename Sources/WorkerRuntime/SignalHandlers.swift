import Dispatch
import Foundation

/// Turns SIGINT and SIGTERM into calls of `action` (on a dispatch queue, not in the async-signal context),
/// so a worker can stop gracefully; the handlers stay installed while this value lives.
///
/// `@unchecked Sendable`: the sources are created in `init` and only cancelled in `deinit`.
public final class SignalHandlers: @unchecked Sendable {
    private let sources: [DispatchSourceSignal]

    public init(signals: [Int32] = [SIGINT, SIGTERM], action: @escaping @Sendable (Int32) -> Void) {
        let queue = DispatchQueue(label: "signals")
        sources = signals.map { number in
            // The default action would end the process before the job is finished or released.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { action(number) }
            source.resume()
            return source
        }
    }

    deinit {
        for source in sources { source.cancel() }
    }
}

extension Worker {
    /// Installs SIGINT/SIGTERM handlers that call `requestStop()`: the first signal drains, the second
    /// releases running jobs at once. Keep the returned value alive while the worker runs.
    public func stopOnSignals() -> SignalHandlers {
        SignalHandlers { [weak self] _ in self?.requestStop() }
    }
}
