import Foundation
import Pipelines

/// `adapt device`: what the train step's device policy sees now, and what it would decide.
public enum DeviceCheck {
    /// Reads power supplies, thermal zones and memory under `root` (sys/ and proc/) and applies `policy`.
    public static func check(_ policy: DevicePolicy, root: URL) -> (readings: DeviceReadings, decision: DeviceDecision) {
        let readings = DeviceReadings.read(root: root)
        return (readings, policy.decide(readings))
    }
}
