import Foundation

/// The calendar date a nightly run belongs to: half of its unique key (lineage + night).
///
/// A run scheduled for 02:00 on 1 December belongs to the night 2026-12-01, the local date it starts on.
public struct Night: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public let year: Int
    public let month: Int
    public let day: Int

    /// Nil unless year, month and day name a real date of the proleptic Gregorian calendar (years 1–9999).
    public init?(year: Int, month: Int, day: Int) {
        guard (1...9999).contains(year), (1...12).contains(month), (1...Self.days(inMonth: month, year: year)).contains(day)
        else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    /// Parses `YYYY-MM-DD`; throws `PipelineError.invalidNight` otherwise.
    public init(parsing text: String) throws {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
              let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]),
              let night = Night(year: y, month: m, day: d)
        else { throw PipelineError.invalidNight(text) }
        self = night
    }

    /// The local date of `date` in `timeZone`.
    public init(date: Date, timeZone: TimeZone = .current) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        guard let night = Night(year: parts.year ?? 1, month: parts.month ?? 1, day: parts.day ?? 1) else {
            preconditionFailure("the Gregorian calendar produced an impossible date for \(date)")
        }
        self = night
    }

    /// The night `days` later (earlier when negative), across month and year ends.
    public func advanced(by days: Int) -> Night {
        var (y, m, d) = (year, month, day)
        var remaining = days
        while remaining > 0 {
            let left = Self.days(inMonth: m, year: y) - d
            if remaining <= left { d += remaining; remaining = 0 } else {
                remaining -= left + 1
                d = 1
                if m == 12 { m = 1; y += 1 } else { m += 1 }
            }
        }
        while remaining < 0 {
            if -remaining < d { d += remaining; remaining = 0 } else {
                remaining += d
                if m == 1 { m = 12; y -= 1 } else { m -= 1 }
                d = Self.days(inMonth: m, year: y)
            }
        }
        guard let night = Night(year: y, month: m, day: d) else {
            preconditionFailure("night \(self) advanced by \(days) days leaves years 1–9999")
        }
        return night
    }

    public var description: String {
        String(format: "%04d-%02d-%02d", year, month, day)
    }

    public static func < (a: Night, b: Night) -> Bool { (a.year, a.month, a.day) < (b.year, b.month, b.day) }

    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do { try self.init(parsing: text) } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a YYYY-MM-DD date"))
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    static func days(inMonth month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}
