import AdaptCore
@testable import JobQueue
import Testing

/// The fast JSON paths of the claim/complete hot path agree with Foundation (the reference) exactly.
@Suite struct JobJSONTests {
    /// A seeded random document mixing what the fast paths handle with what they leave to Foundation.
    struct Generator {
        let rng: CounterRNG
        var counter: UInt32 = 0

        mutating func draw(_ bound: UInt64) -> Int {
            counter += 1
            return Int(rng.below(bound, .test, step: 0, index: counter))
        }

        mutating func string() -> String {
            let alphabet = Array("abcXYZ09_-/ .:\"\\\u{01}\n\té€😀AaBb10")
            return String((0..<draw(8)).map { _ in alphabet[draw(UInt64(alphabet.count))] })
        }

        mutating func value(depth: Int = 0) -> JSONValue {
            switch draw(depth > 3 ? 5 : 7) {
            case 0: return .null
            case 1: return .bool(draw(2) == 0)
            case 2: return .int([0, 1, -1, 42, Int.max, Int.min, 1_700_000_000_000][draw(7)])
            case 3: return .double([0.5, -2.25, 1e300, 3.0][draw(4)])
            case 4: return .string(string())
            case 5: return .array((0..<draw(4)).map { _ in value(depth: depth + 1) })
            default:
                var fields: [String: JSONValue] = [:]
                for _ in 0..<draw(5) { fields[string()] = value(depth: depth + 1) }
                return .object(fields)
            }
        }
    }

    @Test(arguments: 0..<20)
    func fastTextIsFoundationsCanonicalText(seed: Int) throws {
        var generator = Generator(rng: CounterRNG(seed: UInt64(seed)))
        for _ in 0..<50 {
            let value = generator.value()
            #expect(JobJSON.canonicalString(value) == JSON.canonicalString(value))
        }
    }

    @Test(arguments: 0..<20)
    func fastReadingGivesFoundationsValue(seed: Int) throws {
        var generator = Generator(rng: CounterRNG(seed: UInt64(seed)))
        for _ in 0..<50 {
            let text = JSON.canonicalString(generator.value())
            #expect(try JobJSON.decode(text, context: "test") == JSON.decode(JSONValue.self, from: text, context: "test"))
        }
    }

    @Test(arguments: [" { \"a\" : [ 1 , -2 , true , null ] } ", "{\"a\":1,\"a\":2}", "-0", "1.0", "1e3", "01",
                      "9223372036854775807", "9223372036854775808", "-9223372036854775808", "\"\\u0041\"", "[]", "{}", "[1,]"])
    func textsFoundationReadsDifferentlyOrRefusesAreLeftToIt(text: String) throws {
        let expected = try? JSON.decode(JSONValue.self, from: text, context: "test")
        #expect((try? JobJSON.decode(text, context: "test")) == expected)
    }

    @Test(arguments: ["", "{", "{\"a\"}", "tru", "nul", "1 2", "\"open"])
    func malformedTextsAreRefused(text: String) throws {
        #expect(throws: (any Error).self) { try JobJSON.decode(text, context: "test") }
    }
}
