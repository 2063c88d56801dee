extension FixedWidthInteger {
    /// `value` rounded toward zero and clamped to the type's range; NaN gives 0.
    ///
    /// `Int64(someDouble)` traps on NaN, infinity and anything out of range, and doubles reach this code from
    /// clients (a reported timestamp of 9999999999999999 seconds is 1e19 ms, past `Int64.max`). Every conversion of
    /// a floating-point value that did not come from our own clock goes through here. It lives in the lowest layer
    /// that every other one imports (log timestamps need it too).
    @inlinable
    package init<Source: BinaryFloatingPoint>(saturating value: Source) {
        if value.isNaN {
            self = 0
        } else if value <= Source(Self.min) {
            self = .min
        } else if value >= Source(Self.max) {
            // `Source(Self.max)` may round up past `max` (2^63 for Int64), so `>=` is what keeps `init` below safe.
            self = .max
        } else {
            self.init(value.rounded(.towardZero))
        }
    }
}
