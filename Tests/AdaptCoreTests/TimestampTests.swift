import AdaptCore
import Testing

@Test func timestampsAreISO8601UTCWithExactMilliseconds() {
    // Through Date's floating-point seconds this value used to print as .122.
    #expect(Timestamp.iso8601(1_767_225_600_123) == "2026-01-01T00:00:00.123Z")
}

@Test(arguments: [(Int64(0), "1970-01-01T00:00:00.000Z"), (951_782_400_001, "2000-02-29T00:00:00.001Z"),
                  (1_767_225_599_999, "2025-12-31T23:59:59.999Z"), (-1, "1969-12-31T23:59:59.999Z"),
                  (4_102_444_800_000, "2100-01-01T00:00:00.000Z")])
func timestampsMatchTheCalendar(milliseconds: Int64, expected: String) {
    #expect(Timestamp.iso8601(milliseconds) == expected)
}
