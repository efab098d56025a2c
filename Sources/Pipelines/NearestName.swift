/// "Did you mean …?" for misspelt keys, step names and choices: the closest candidate by edit distance.
enum NearestName {
    /// The candidate closest to `word`, if it is close enough to be a plausible typo.
    static func suggestion(for word: String, among candidates: [String]) -> String? {
        let lowered = word.lowercased()
        var best: (name: String, distance: Int)?
        for candidate in candidates {
            let distance = editDistance(lowered, candidate.lowercased())
            if best == nil || distance < best!.distance { best = (candidate, distance) }
        }
        guard let best else { return nil }
        // A third of the longer word, and at least two edits: "rnak" → "rank", "lerning_rate" → "learning_rate".
        let limit = max(2, max(word.count, best.name.count) / 3)
        return best.distance <= limit ? best.name : nil
    }

    /// Damerau–Levenshtein distance (optimal string alignment): swaps of neighbours count as one edit.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let x = Array(a), y = Array(b)
        if x.isEmpty { return y.count }
        if y.isEmpty { return x.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: y.count + 1), count: x.count + 1)
        for i in 0...x.count { table[i][0] = i }
        for j in 0...y.count { table[0][j] = j }
        for i in 1...x.count {
            for j in 1...y.count {
                let cost = x[i - 1] == y[j - 1] ? 0 : 1
                var value = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, x[i - 1] == y[j - 2], x[i - 2] == y[j - 1] {
                    value = min(value, table[i - 2][j - 2] + 1)
                }
                table[i][j] = value
            }
        }
        return table[x.count][y.count]
    }
}
