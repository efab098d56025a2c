import AdaptCore
import CommandLineKit
import Foundation
import Services

/// The running jobs' progress on stderr while `adapt work` runs: on a terminal, one bar per running job redrawn in
/// place (log lines are printed above the bars, which are drawn again under them); with `--json`, one JSON line
/// per change. The supervisor logs from its own threads, so every write holds the lock.
final class ProgressBoard: @unchecked Sendable {  // all state is guarded by `lock`
    enum Style { case bars, jsonLines }

    private let style: Style
    private let lock = NSLock()
    private var drawn = 0
    private var entries: [LiveProgress.Entry] = []
    /// After `finish`, a change the watcher still reports is not drawn.
    private var finished = false

    init(style: Style) { self.style = style }

    /// A log line of the supervisor.
    func log(_ line: String) {
        lock.withLock {
            guard style == .bars else { return Console.error(line) }
            erase()
            Console.error(line)
            draw()
        }
    }

    func show(_ entries: [LiveProgress.Entry], at now: Int64) {
        lock.withLock {
            guard !finished else { return }
            switch style {
            case .jsonLines:
                let line = JSONValue.object([
                    "type": .string("progress"), "at": .string(Timestamp.iso8601(now)),
                    "running": (try? JSON.decode(JSONValue.self, from: JSON.canonical(entries), context: "progress")) ?? .array([]),
                ])
                Console.error(JSON.canonicalString(line))
            case .bars:
                erase()
                self.entries = entries
                draw()
            }
        }
    }

    /// Leaves the terminal as it was before the bars.
    func finish() {
        lock.withLock {
            finished = true
            if style == .bars { erase(); entries = [] }
        }
    }

    private func erase() {
        guard drawn > 0 else { return }
        // Up to the first bar's line, then clear to the end of the screen.
        FileHandle.standardError.write(Data("\u{1B}[\(drawn)F\u{1B}[J".utf8))
        drawn = 0
    }

    private func draw() {
        let width = Int(ProcessInfo.processInfo.environment["COLUMNS"] ?? "") ?? 100
        let text = entries.map { TerminalText.escaped(LiveProgress.line($0, width: width)) + "\n" }.joined()
        FileHandle.standardError.write(Data(text.utf8))
        drawn = entries.count
    }
}
