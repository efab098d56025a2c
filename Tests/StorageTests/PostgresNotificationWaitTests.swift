import Foundation
import Storage
import TestSupport
import Testing

/// A wait for notifications ends when one arrives, when its time is up, or when another thread raises its wake-up.
@Suite struct PostgresNotificationWaitTests {
    @Test func aRaisedWakeUpEndsAWaitAtOnceWithNothingReceived() throws {
        let listener = try PostgresConnection(try PostgresCluster.shared().makeDatabase())
        try listener.listen("news")
        let wakeUp = WakeUpEvent()
        let raiser = Thread { usleep(50_000); wakeUp.raise() }
        let started = Date()
        raiser.start()
        #expect(try listener.waitForNotifications(timeoutMilliseconds: 10_000, wakeUp: wakeUp).isEmpty)
        #expect(Date().timeIntervalSince(started) < 5, "ended by the raise, not by the timeout")
    }

    @Test func raisesNobodyConsumedEndTheNextWaitOnceOnly() throws {
        let target = try PostgresCluster.shared().makeDatabase()
        let listener = try PostgresConnection(target)
        try listener.listen("news")
        let wakeUp = WakeUpEvent()
        wakeUp.raise()
        wakeUp.raise()
        #expect(try listener.waitForNotifications(timeoutMilliseconds: 10_000, wakeUp: wakeUp).isEmpty)
        let started = Date()
        #expect(try listener.waitForNotifications(timeoutMilliseconds: 300, wakeUp: wakeUp).isEmpty)
        #expect(Date().timeIntervalSince(started) >= 0.25, "the second wait ran to its timeout")

        try PostgresConnection(target).execute("NOTIFY news, 'hello'")
        let received = try listener.waitForNotifications(timeoutMilliseconds: 10_000, wakeUp: wakeUp)
        #expect(received.map(\.channel) == ["news"] && received.map(\.payload) == ["hello"])
    }
}
