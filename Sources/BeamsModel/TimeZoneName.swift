import Foundation

/// Validates IANA time zone names from devices (`PUT …/time-zone`) and config (`defaultTimeZone`): bounded in
/// length and alphabet, and known to the system's tz database (Foundation's `TimeZone`, on Linux read from
/// /usr/share/zoneinfo). Only names are accepted, not offsets or abbreviations ("CET", "GMT+1"), so that a stored
/// zone keeps meaning the same place across DST rules.
public enum TimeZoneName {
    /// The longest IANA name is about 30 bytes ("America/Argentina/ComodRivadavia").
    package static let maxLength = 64

    /// Foundation's zone names, read once.
    static let known: Set<String> = Set(TimeZone.knownTimeZoneIdentifiers).union(["UTC"])

    /// - Returns: nil when `name` is a known IANA zone, otherwise what is wrong with it.
    public static func problem(_ name: String) -> String? {
        guard !name.isEmpty, name.utf8.count <= maxLength else {
            return "must be an IANA time zone name of 1 to \(maxLength) characters, e.g. Europe/Paris"
        }
        let allowed = name.utf8.allSatisfy { byte in
            (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
                || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: "+")
        }
        guard allowed else { return "must be an IANA time zone name (letters, digits, / _ - +), e.g. Europe/Paris" }
        // Echoed only after the alphabet check: the name cannot carry control characters into a response.
        // Foundation's list holds ICU's canonical names (Asia/Calcutta, not Asia/Kolkata): an Area/Location name the
        // tz database resolves is accepted too; a bare name must be on the list (no "GMT+1", no "CET-ish" guesses).
        guard known.contains(name) || name.contains("/"), TimeZone(identifier: name) != nil else {
            return "unknown time zone \"\(name)\": use an IANA name such as Europe/Paris"
        }
        return nil
    }
}
