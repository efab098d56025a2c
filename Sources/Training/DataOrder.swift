import AdaptCore

/// Where the next batch starts: the epoch and the position inside that epoch's permutation.
public struct DataCursor: Sendable, Equatable, Codable {
    public var epoch: Int
    public var index: Int

    public init(epoch: Int = 0, index: Int = 0) {
        self.epoch = epoch
        self.index = index
    }
}

/// The order in which a run visits its examples.
///
/// Epoch e visits the examples in `CounterRNG(seed).permutation(count, .dataOrder, step: e)`: a pure function
/// of (seed, epoch), so a resumed run that restores the cursor sees exactly the batches the original saw.
/// A batch that runs past the end of an epoch continues at the start of the next one.
public struct DataOrder: Sendable {
    public let count: Int
    public let rng: CounterRNG
    // The permutation of the epoch last used, kept so a batch does not reshuffle the whole dataset.
    private var cachedEpoch = -1
    private var cached: [Int] = []

    public init(count: Int, seed: UInt64) {
        precondition(count > 0, "a data order needs at least one example")
        self.count = count
        self.rng = CounterRNG(seed: seed)
    }

    /// The permutation of 0..<count for `epoch`.
    public func permutation(epoch: Int) -> [Int] {
        rng.permutation(count, .dataOrder, step: UInt64(epoch))
    }

    /// The next `size` example indices from `cursor`, advancing it.
    public mutating func take(_ size: Int, from cursor: inout DataCursor) -> [Int] {
        precondition(cursor.index >= 0 && cursor.index < count, "cursor outside the dataset")
        var indices: [Int] = []
        indices.reserveCapacity(size)
        while indices.count < size {
            if cachedEpoch != cursor.epoch {
                cached = permutation(epoch: cursor.epoch)
                cachedEpoch = cursor.epoch
            }
            indices.append(cached[cursor.index])
            cursor.index += 1
            if cursor.index == count {
                cursor.epoch += 1
                cursor.index = 0
            }
        }
        return indices
    }

    /// The cursor after `sequences` sequences have been taken from the start of epoch 0.
    public func cursor(after sequences: Int) -> DataCursor {
        DataCursor(epoch: sequences / count, index: sequences % count)
    }
}
