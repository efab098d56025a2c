import AdaptCore
import Foundation
import Testing
@testable import Evaluation

/// Replays `Fixtures/wilcoxon.json`, written by `scripts/fixtures/wilcoxon_fixtures.py` with SciPy 1.17:
/// every case × zero method × alternative × method × continuity correction.
///
/// Tolerance: statistics must be equal (they are sums of half-integer ranks, exact in binary); p-values,
/// medians and effect sizes must agree to 1e-9 relative (plus 1e-300 absolute, for p-values that underflow
/// in both). Where SciPy returns NaN or raises, the Swift side must throw an `EvaluationError`.
struct FixtureCase: Decodable, Sendable, CustomTestStringConvertible {
    let name: String
    let candidate: [Double]
    let baseline: [Double]
    let median_difference: Double?
    let effect_size: [String: Double]
    let results: [String: Expected]
    var testDescription: String { name }

    enum Expected: Decodable, Sendable {
        case value(statistic: Double?, pValue: Double?)
        case error(String)

        init(from decoder: Decoder) throws {
            if var array = try? decoder.unkeyedContainer() {
                self = .value(statistic: try array.decodeNil() ? nil : try array.decode(Double.self),
                              pValue: try array.decodeNil() ? nil : try array.decode(Double.self))
            } else {
                struct Failure: Decodable { let error: String }
                self = .error(try Failure(from: decoder).error)
            }
        }
    }
}

struct FixtureFile: Decodable { let scipy: String; let cases: [FixtureCase] }

let fixtures: FixtureFile = {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/wilcoxon.json")
    do { return try JSONDecoder().decode(FixtureFile.self, from: Data(contentsOf: url)) } catch {
        preconditionFailure("cannot read the SciPy fixtures: \(error)")
    }
}()

func close(_ a: Double, _ b: Double, relative: Double = 1e-9) -> Bool {
    a == b || Swift.abs(a - b) <= relative * max(Swift.abs(a), Swift.abs(b)) || Swift.abs(a - b) < 1e-300
}

@Test func fixturesCameFromSciPy117AndCoverEveryRegime() {
    #expect(fixtures.scipy.hasPrefix("1.17"))
    #expect(fixtures.cases.count >= 60)
    let names = fixtures.cases.map(\.name)
    for prefix in ["continuous_", "ties_", "zeros_", "all_zero_", "all_equal_", "candidate_better_", "empty"] {
        #expect(names.contains { $0.hasPrefix(prefix) }, "no case named \(prefix)…")
    }
}

@Test(arguments: fixtures.cases)
func matchesSciPyOnEveryOptionCombination(_ fixture: FixtureCase) throws {
    #expect(fixture.results.count == 54)
    for (key, expected) in fixture.results.sorted(by: { $0.key < $1.key }) {
        let parts = key.split(separator: "/").map(String.init)
        let options = WilcoxonOptions(
            alternative: try #require(Alternative(rawValue: parts[1])),
            method: parts[2] == "asymptotic" ? .approx : try #require(WilcoxonMethod(rawValue: parts[2])),
            zeroMethod: try #require(ZeroMethod(rawValue: parts[0])),
            correction: parts[3] == "1")
        let outcome = Result { try WilcoxonSignedRank.test(candidate: fixture.candidate, baseline: fixture.baseline, options: options) }
        switch (expected, outcome) {
        case let (.value(statistic?, pValue?), .success(result)):
            #expect(result.statistic == statistic, "\(key): statistic \(result.statistic) vs SciPy \(statistic)")
            #expect(close(result.pValue, pValue), "\(key): p \(result.pValue) vs SciPy \(pValue)")
        case (.value(_, nil), .failure(let error)), (.error, .failure(let error)):
            #expect(error is EvaluationError, "\(key): \(error)")
        case let (.value(_, p), .success(result)):
            Issue.record("\(key): SciPy gave p \(String(describing: p)) (NaN), Swift gave \(result.pValue)")
        case let (_, .failure(error)):
            Issue.record("\(key): SciPy gave \(expected), Swift threw \(error)")
        case let (.error(name), .success(result)):
            Issue.record("\(key): SciPy raised \(name), Swift gave \(result.pValue)")
        }
    }
}

@Test(arguments: fixtures.cases.filter { !$0.candidate.isEmpty })
func medianAndEffectSizeMatchNumPy(_ fixture: FixtureCase) throws {
    for zeroMethod in ZeroMethod.allCases {
        let options = WilcoxonOptions(method: .approx, zeroMethod: zeroMethod)
        // A throw is right only where SciPy itself raised or gave NaN for the same options.
        let scipy = try #require(fixture.results["\(zeroMethod.rawValue)/two-sided/asymptotic/0"])
        let result: WilcoxonResult
        do {
            result = try WilcoxonSignedRank.test(candidate: fixture.candidate, baseline: fixture.baseline, options: options)
        } catch {
            switch scipy {
            case .error, .value(_, nil): continue
            case .value: Issue.record("\(zeroMethod): SciPy gave a p-value, Swift threw \(error)"); continue
            }
        }
        #expect(close(result.medianDifference, try #require(fixture.median_difference)))
        #expect(close(result.effectSize, try #require(fixture.effect_size[zeroMethod.rawValue])))
    }
}
