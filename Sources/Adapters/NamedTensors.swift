/// An ordered list of named float tensors: an adapter file's weights, and in training the trainable parameters,
/// their gradients or an optimizer moment.
///
/// Order is part of the value (names are never looked up through a dictionary), so every loop over the
/// tensors visits them in the same order in every run, and sums over them are reproducible to the bit.
public struct NamedTensors: Sendable, Equatable {
    public var names: [String]
    /// Row-major shape of each tensor, e.g. `[rank, in]` for a LoRA A matrix.
    public var shapes: [[Int]]
    public var values: [[Float]]

    public init(names: [String], shapes: [[Int]], values: [[Float]]) {
        precondition(names.count == shapes.count && shapes.count == values.count, "names, shapes and values must align")
        for (shape, value) in zip(shapes, values) {
            precondition(shape.reduce(1, *) == value.count, "tensor shape \(shape) does not match \(value.count) values")
        }
        self.names = names
        self.shapes = shapes
        self.values = values
    }

    /// Tensors of the same names and shapes, filled with zeros (a fresh optimizer moment).
    public static func zeros(like other: NamedTensors) -> NamedTensors {
        NamedTensors(names: other.names, shapes: other.shapes,
                     values: other.values.map { [Float](repeating: 0, count: $0.count) })
    }

    /// The number of values a tensor of `shape` holds, or nil when a dimension is negative or the product
    /// overflows an Int (a shape read from a damaged file, which must be refused rather than trap).
    public static func elementCount(of shape: [Int]) -> Int? {
        var product = 1
        for dimension in shape {
            guard dimension >= 0 else { return nil }
            let (next, overflow) = product.multipliedReportingOverflow(by: dimension)
            guard !overflow else { return nil }
            product = next
        }
        return product
    }

    public var count: Int { names.count }
    /// Total number of scalars over every tensor.
    public var scalarCount: Int { values.reduce(0) { $0 + $1.count } }

    /// True when `other` has the same names and shapes in the same order.
    public func hasLayout(of other: NamedTensors) -> Bool { names == other.names && shapes == other.shapes }

    /// Bitwise equality, which (unlike `==` on floats) treats two NaNs with the same payload as equal and
    /// +0 and -0 as different: the comparison that "bit-identical" means.
    public func bitwiseEqual(_ other: NamedTensors) -> Bool {
        guard hasLayout(of: other) else { return false }
        for (a, b) in zip(values, other.values) {
            guard a.count == b.count else { return false }
            for i in a.indices where a[i].bitPattern != b[i].bitPattern { return false }
        }
        return true
    }
}
