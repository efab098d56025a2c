import AdaptCore
import Adapters
import Foundation
import Testing

/// Adapter files whose digest is intact but whose numbers are impossible (a shape whose product overflows, a
/// NaN weight, a non-positive alpha) are refused as corrupt, never a trap: the header is text anyone can edit.
@Suite struct ImplausibleAdapterValuesTests {
    func adapter(alpha: Float = 6, _ change: (inout NamedTensors) -> Void = { _ in }) -> Data {
        var tensors = sampleTensors()
        change(&tensors)
        return sampleAdapter(tensors, alpha: alpha).encoded().data
    }

    func expectMalformed(_ field: String, _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("accepted a file with an impossible \(field)")
        } catch let AdapterFileError.malformed(_, refused, _) {
            #expect(refused.contains(field), "refused \(refused), expected \(field)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func refusesAnAdapterTensorWhoseShapeProductOverflows() {
        // Set through the property: the initializer would check the shape against the values.
        let data = adapter { $0.shapes[0] = [16_777_215, 16_777_215, 16_777_215, 16_777_215] }
        expectMalformed("tensor") { _ = try AdapterFile.decode(data, name: "a") }
    }

    @Test(arguments: [Float.nan, .infinity, -.infinity])
    func refusesAnAdapterHoldingANonFiniteValue(_ bad: Float) {
        let data = adapter { $0.values[1][0] = bad }
        expectMalformed("tensor") { _ = try AdapterFile.decode(data, name: "a") }
    }

    @Test(arguments: [Float(0), -2])
    func refusesAnAdapterWhoseAlphaIsNotPositive(_ bad: Float) {
        expectMalformed("alpha") { _ = try AdapterFile.decode(adapter(alpha: bad), name: "a") }
    }

    @Test(arguments: [Float(3e38), 1e19, 1_000_001])
    func refusesAnAdapterWhoseAlphaIsPastTheLargestPlausible(_ bad: Float) {
        expectMalformed("alpha") { _ = try AdapterFile.decode(adapter(alpha: bad), name: "a") }
    }

    @Test func stillReadsAnOrdinaryAdapter() throws {
        _ = try AdapterFile.decode(adapter(), name: "a")
    }
}
