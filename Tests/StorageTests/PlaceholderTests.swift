@testable import Storage
import Testing

@Test func questionMarkParametersAreNumberedForPostgresInOrder() {
    #expect(Placeholders.numbered("SELECT a FROM t WHERE b = ? AND c > ?") == "SELECT a FROM t WHERE b = $1 AND c > $2")
    #expect(Placeholders.numbered("INSERT INTO t VALUES (?, ?, ?)") == "INSERT INTO t VALUES ($1, $2, $3)")
}

@Test func questionMarksInLiteralsIdentifiersAndCommentsStayText() {
    #expect(Placeholders.numbered("SELECT '?' || ? FROM \"odd?\" -- why?\nWHERE x = ?")
        == "SELECT '?' || $1 FROM \"odd?\" -- why?\nWHERE x = $2")
    #expect(Placeholders.numbered("SELECT 'it''s ?', ?") == "SELECT 'it''s ?', $1")
}

@Test func statementsAlreadyNumberedPassUnchanged() {
    let sql = "UPDATE jobs SET state = $1 WHERE id = $2"
    #expect(Placeholders.numbered(sql) == sql)
}
