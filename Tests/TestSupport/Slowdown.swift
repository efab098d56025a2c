import Foundation

/// How many times slower the code under test runs than in the plain debug build: 1 unless `ADAPT_TEST_SLOWDOWN`
/// says otherwise, which `scripts/test --sanitize` sets to what it measured for that sanitizer.
///
/// A wall-clock bound in a test has two parts: time the test fixes itself (a lease, a job's sleep), which a
/// sanitizer does not stretch, and the program's own work (starting a process, claiming, committing), which it
/// does. Only the second part is scaled, so a bound still fails when the property breaks (a rescue that never
/// happens, a worker that never exits), only later.
public enum Slowdown {
    public static let variable = "ADAPT_TEST_SLOWDOWN"

    public static let factor: Double = {
        guard let text = ProcessInfo.processInfo.environment[variable] else { return 1 }
        // A bound scaled by a typo (0, -3, "ten", a factor no sanitizer needs) would pass or fail for the wrong
        // reason; a bad value is the runner's mistake, so it stops the run.
        guard let value = Double(text), value >= 1, value <= 50 else {
            preconditionFailure("\(variable) must be a number from 1 to 50 (scripts/test --sanitize sets it); unset it for a plain run")
        }
        return value
    }()

    /// The program's own share of a bound, stretched by `factor`.
    public static func scaled(_ work: Duration) -> Duration { work * factor }

    /// `scaled`, in seconds.
    public static func scaled(seconds work: Double) -> Double { work * factor }

    /// A whole-test time limit (Swift Testing counts it in minutes), stretched by `factor` and rounded up.
    public static func minutes(_ plain: Int) -> Int { Int((Double(plain) * factor).rounded(.up)) }
}
