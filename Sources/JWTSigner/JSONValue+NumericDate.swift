import JSON

extension JSONValue {
    /// The value as a whole number of seconds (a NumericDate, RFC 7519 §2), or `nil` for anything else.
    ///
    /// Integral numbers written with a fraction or an exponent (`1.7e9`, `1700000000.0`) are accepted: RFC 7519
    /// allows any JSON number, and Go/Node/Python JWT libraries (the Beams service among them) read NumericDates
    /// as floats, so a token they accept must not fail here. Fractional values are refused: the Beams service
    /// rejected them (server-Swift SDK changelog 1.0.2), and rounding would move an expiry.
    package var numericDate: Int? { intValue }
}
