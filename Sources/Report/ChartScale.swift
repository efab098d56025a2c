import Foundation

/// A linear map from data values onto a pixel range, with the "nice" ticks an axis shows.
struct ChartScale {
    let domain: ClosedRange<Double>
    /// Pixels: (where the domain's lower bound lands, where its upper bound lands); a y axis runs downwards.
    let range: (Double, Double)

    /// A domain that is never empty (one value, or none, still gets a span to draw in).
    init(values: [Double], range: (Double, Double), includeZero: Bool = false, padding: Double = 0.05) {
        let finite = values.filter(\.isFinite)
        var low = finite.min() ?? 0, high = finite.max() ?? 1
        if includeZero { low = min(low, 0); high = max(high, 0) }
        if high - low < 1e-12 { low -= 0.5; high += 0.5 }
        let pad = (high - low) * padding
        domain = (includeZero && low == 0 ? 0 : low - pad)...(high + pad)
        self.range = range
    }

    init(domain: ClosedRange<Double>, range: (Double, Double)) {
        self.domain = domain.upperBound - domain.lowerBound < 1e-12 ? (domain.lowerBound - 0.5)...(domain.lowerBound + 0.5) : domain
        self.range = range
    }

    func callAsFunction(_ value: Double) -> Double {
        let clamped = min(max(value.isFinite ? value : domain.lowerBound, domain.lowerBound), domain.upperBound)
        let t = (clamped - domain.lowerBound) / (domain.upperBound - domain.lowerBound)
        return range.0 + t * (range.1 - range.0)
    }

    /// About `count` ticks at 1, 2 or 5 times a power of ten, inside the domain.
    func ticks(_ count: Int = 5) -> [Double] {
        let span = domain.upperBound - domain.lowerBound
        let raw = span / Double(max(1, count))
        let magnitude = pow(10, floor(log10(raw)))
        let step = [1.0, 2, 5, 10].map { $0 * magnitude }.first { $0 >= raw } ?? raw
        var tick = ceil(domain.lowerBound / step) * step
        var ticks: [Double] = []
        while tick <= domain.upperBound + step * 1e-9, ticks.count < 50 {
            ticks.append(abs(tick) < step * 1e-9 ? 0 : tick)
            tick += step
        }
        return ticks
    }
}
