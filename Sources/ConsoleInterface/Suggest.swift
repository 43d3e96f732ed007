/// "Did you mean …?" for a mistyped command, subcommand or tenant name: the closest candidate
/// within a small edit distance, or a unique candidate the word is a prefix of.
public enum Suggest {
    /// The closest candidate, if it is close enough to be what the operator meant.
    public static func closest(to word: String, among candidates: [String]) -> String? {
        let lowered = word.lowercased()
        let prefixed = candidates.filter { $0.hasPrefix(lowered) && $0 != lowered }
        if prefixed.count == 1, lowered.count >= 2 { return prefixed[0] }
        let limit = max(1, min(3, lowered.count / 3))
        let scored = candidates.map { ($0, distance(lowered, $0.lowercased())) }.filter { $0.1 <= limit }
        return scored.min { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 < $1.0) }?.0
    }

    /// `" (did you mean 'X'?)"`, or nothing.
    public static func didYouMean(_ word: String, among candidates: [String]) -> String {
        closest(to: word, among: candidates).map { " (did you mean '\($0)'?)" } ?? ""
    }

    /// Levenshtein distance with transpositions counted as one edit (bounded input: words).
    public static func distance(_ a: String, _ b: String) -> Int {
        let x = Array(a.unicodeScalars.prefix(64))
        let y = Array(b.unicodeScalars.prefix(64))
        if x.isEmpty { return y.count }
        if y.isEmpty { return x.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: y.count + 1), count: x.count + 1)
        for i in 0...x.count { table[i][0] = i }
        for j in 0...y.count { table[0][j] = j }
        for i in 1...x.count {
            for j in 1...y.count {
                let cost = x[i - 1] == y[j - 1] ? 0 : 1
                var best = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, x[i - 1] == y[j - 2], x[i - 2] == y[j - 1] {
                    best = min(best, table[i - 2][j - 2] + 1)
                }
                table[i][j] = best
            }
        }
        return table[x.count][y.count]
    }
}
