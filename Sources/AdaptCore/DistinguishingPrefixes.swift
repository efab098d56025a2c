/// Two digests in a message, each cut to the shortest prefix (12 characters at least) where they differ: two
/// hashes that agree in their first 12 characters would otherwise print as the same one.
public func distinguishingPrefixes(_ first: String, _ second: String) -> (String, String) {
    let common = zip(first, second).prefix { $0 == $1 }.count
    let length = max(12, common + 1)
    return (String(first.prefix(length)), String(second.prefix(length)))
}
