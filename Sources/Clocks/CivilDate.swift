/// Proleptic Gregorian calendar arithmetic for the parsers that read dates off the wire (`Retry-After`'s HTTP-date,
/// RFC 3339 times): pure integer maths, no formatter, no locale, no time zone database.
package enum CivilDate {
    /// Days since 1970-01-01 of a date (H. Hinnant's `days_from_civil`); exact for any year the parsers accept.
    package static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// Days in `month` (1–12) of `year`.
    package static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}
