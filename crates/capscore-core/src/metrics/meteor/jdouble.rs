//! Java's `Double.toString` layout (spec METEOR §13.4): shortest round-trip digits, plain
//! decimal for `1e-3 ≤ |x| < 1e7`, otherwise `d.dddE±n`.

/// Formats `x` as Java's `Double.toString` does (JDK ≥ 19 shortest-digits semantics, which JDK 17
/// matched on every value tested).
pub fn to_string(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let a = x.abs();
    if (1e-3..1e7).contains(&a) {
        let s = format!("{x:?}");
        if s.contains('.') {
            s
        } else {
            format!("{s}.0")
        }
    } else {
        let s = format!("{x:e}");
        let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
        if mant.contains('.') {
            format!("{mant}E{exp}")
        } else {
            format!("{mant}.0E{exp}")
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn layouts() {
        for (x, s) in [
            (9.0, "9.0"),
            (0.0, "0.0"),
            (0.4, "0.4"),
            (0.3284795434441979, "0.3284795434441979"),
            (0.00095, "9.5E-4"),
            (1.0e7, "1.0E7"),
            (12345678.0, "1.2345678E7"),
            (0.001, "0.001"),
        ] {
            assert_eq!(super::to_string(x), s);
        }
    }
}
