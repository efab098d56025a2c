import Model
import Testing

@Test func sgemmAgreesWithTheNaiveProductForEveryTransposition() {
    let m = 5, n = 7, k = 3
    let a = (0..<(m * k)).map { Float($0 % 11) - 5 }   // stored m×k, or k×m when transposed
    let b = (0..<(k * n)).map { Float($0 % 13) - 6 }   // stored k×n, or n×k when transposed
    for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
        var c = [Float](repeating: 0, count: m * n)
        BLAS.sgemm(transposeA: ta, transposeB: tb, m: m, n: n, k: k, a: a, b: b, c: &c)
        for i in 0..<m {
            for j in 0..<n {
                var expected: Float = 0
                for p in 0..<k {
                    let av = ta ? a[p * m + i] : a[i * k + p]
                    let bv = tb ? b[j * k + p] : b[p * n + j]
                    expected += av * bv
                }
                #expect(c[i * n + j] == expected)
            }
        }
    }
}
