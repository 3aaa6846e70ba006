//! Kubernetes resource quantities in their canonical form.
//!
//! The apiserver stores every `Quantity` of a built-in object re-serialised
//! in canonical form (`0.5` → `500m`, `1024Mi` → `1Gi`, `1.5Gi` →
//! `1536Mi`). A Runtime's spec keeps whatever notation the team wrote, so
//! the agent renders the canonical form: otherwise the rendered Deployment
//! would never equal the stored one and every reconcile would re-apply it.
//!
//! This follows apimachinery's `resource.Quantity` rules:
//! - the format comes from the suffix: binary SI (`Ki` … `Ei`), decimal SI
//!   (`n u m k M G T P E` or none) or decimal exponent (`e3`, `E-3`);
//! - values are kept to nano precision, rounded up (away from zero);
//! - a binary value below 1024 in magnitude, or not a whole number, is
//!   written as decimal SI;
//! - the written exponent (or suffix) is the largest one that keeps the
//!   mantissa an integer, in steps of 3 (decimal) or 1024 (binary).

use std::fmt::Write as _;

/// Why a string is not a quantity this module can canonicalise.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// Not of the form `[+-]digits[.digits][suffix]`.
    #[error("quantity {0:?} is not of the form [+-]<number>[<suffix>]")]
    Syntax(String),
    /// The suffix is not one Kubernetes knows.
    #[error("quantity {0:?} has an unknown suffix")]
    Suffix(String),
    /// Too large (or too many digits) to represent exactly.
    #[error("quantity {0:?} is too large")]
    Range(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    BinarySi,
    DecimalSi,
    DecimalExponent,
}

/// One nano-unit is 10^-9; values are held as a count of nano-units.
const NANO: i128 = 1_000_000_000;

/// The canonical form of `input`, as the apiserver would store it.
pub fn canonical(input: &str) -> Result<String, QuantityError> {
    let (nanos, format) = parse(input)?;
    Ok(format_canonical(nanos, format))
}

/// The canonical form when `input` parses; `input` itself otherwise (the
/// CRD's validation refuses such a value before it reaches render).
pub fn canonical_or_same(input: &str) -> String {
    canonical(input).unwrap_or_else(|_| input.to_string())
}

/// The value of `input` in nano-units (10^-9 of the unit), for comparing
/// two quantities whatever their notation.
pub fn nanos(input: &str) -> Result<i128, QuantityError> {
    parse(input).map(|(n, _)| n)
}

fn parse(input: &str) -> Result<(i128, Format), QuantityError> {
    let err_syntax = || QuantityError::Syntax(input.to_string());
    let err_range = || QuantityError::Range(input.to_string());
    let s = input.trim();
    let (negative, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let number_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(number_end);
    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    if (int_part.is_empty() && frac_part.is_empty()) || frac_part.contains('.') {
        return Err(err_syntax());
    }
    // value = mantissa × 10^-scale
    let mut mantissa: i128 = 0;
    for c in int_part.chars().chain(frac_part.chars()) {
        let d = i128::from(c.to_digit(10).ok_or_else(err_syntax)?);
        mantissa = mantissa
            .checked_mul(10)
            .and_then(|m| m.checked_add(d))
            .ok_or_else(err_range)?;
    }
    let mut scale = i32::try_from(frac_part.len()).map_err(|_| err_range())?;
    let format = match suffix {
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => {
            let power = match suffix {
                "Ki" => 1,
                "Mi" => 2,
                "Gi" => 3,
                "Ti" => 4,
                "Pi" => 5,
                _ => 6,
            };
            mantissa = mantissa
                .checked_mul(1i128 << (10 * power))
                .ok_or_else(err_range)?;
            Format::BinarySi
        }
        "" | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E" => {
            scale -= match suffix {
                "n" => -9,
                "u" => -6,
                "m" => -3,
                "" => 0,
                "k" => 3,
                "M" => 6,
                "G" => 9,
                "T" => 12,
                "P" => 15,
                _ => 18,
            };
            Format::DecimalSi
        }
        exp if exp.starts_with(['e', 'E']) => {
            let e: i32 = exp[1..].parse().map_err(|_| err_syntax())?;
            if !(-100..=100).contains(&e) {
                return Err(QuantityError::Suffix(input.to_string()));
            }
            scale -= e;
            Format::DecimalExponent
        }
        _ => return Err(QuantityError::Suffix(input.to_string())),
    };
    // To nano-units, rounding up what lies below a nano.
    let nanos = if scale <= 9 {
        let factor = 10i128
            .checked_pow(u32::try_from(9 - scale).map_err(|_| err_range())?)
            .ok_or_else(err_range)?;
        mantissa.checked_mul(factor).ok_or_else(err_range)?
    } else {
        let divisor = 10i128
            .checked_pow(u32::try_from(scale - 9).map_err(|_| err_range())?)
            .unwrap_or(i128::MAX);
        let q = mantissa / divisor;
        if mantissa % divisor == 0 { q } else { q + 1 }
    };
    Ok((if negative { -nanos } else { nanos }, format))
}

fn format_canonical(nanos: i128, format: Format) -> String {
    if nanos == 0 {
        return "0".to_string();
    }
    let format = match format {
        Format::BinarySi if nanos.abs() < 1024 * NANO || nanos % NANO != 0 => Format::DecimalSi,
        f => f,
    };
    let mut out = String::new();
    match format {
        Format::BinarySi => {
            let mut value = nanos / NANO;
            let mut power = 0;
            while power < 6 && value % 1024 == 0 {
                value /= 1024;
                power += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
            let _ = write!(out, "{value}{suffix}");
        }
        Format::DecimalSi | Format::DecimalExponent => {
            let mut value = nanos;
            let mut exponent = -9i32;
            while value % 1000 == 0 && (format == Format::DecimalExponent || exponent < 18) {
                value /= 1000;
                exponent += 3;
            }
            let _ = write!(out, "{value}");
            if format == Format::DecimalExponent {
                if exponent != 0 {
                    let _ = write!(out, "e{exponent}");
                }
            } else {
                out.push_str(match exponent {
                    -9 => "n",
                    -6 => "u",
                    -3 => "m",
                    3 => "k",
                    6 => "M",
                    9 => "G",
                    12 => "T",
                    15 => "P",
                    18 => "E",
                    _ => "",
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected values are what kube-apiserver stores for each input
    /// (apimachinery's own table tests and observed round-trips).
    #[test]
    fn canonical_forms() {
        let cases = [
            ("0", "0"),
            ("0.0", "0"),
            ("0Mi", "0"),
            ("1", "1"),
            ("0.5", "500m"),
            ("1.5", "1500m"),
            ("100m", "100m"),
            ("1000m", "1"),
            ("1500m", "1500m"),
            ("2000m", "2"),
            ("0.1m", "100u"),
            ("0.0001", "100u"),
            ("1n", "1n"),
            ("0.1n", "1n"),
            ("1000", "1k"),
            ("1500", "1500"),
            ("1k", "1k"),
            ("1000k", "1M"),
            ("1G", "1G"),
            ("128974848", "128974848"),
            ("129e6", "129e6"),
            ("129M", "129M"),
            ("123Mi", "123Mi"),
            ("1024Mi", "1Gi"),
            ("1536Mi", "1536Mi"),
            ("1.5Gi", "1536Mi"),
            ("0.5Gi", "512Mi"),
            ("1024Ki", "1Mi"),
            ("1Ki", "1Ki"),
            ("512", "512"),
            ("1000Ki", "1000Ki"),
            // Below 1024 a binary quantity is written in decimal.
            ("0.5Ki", "512"),
            ("1023", "1023"),
            ("0.5Mi", "512Ki"),
            // Not a whole number of bytes: decimal, no precision lost.
            ("1.5", "1500m"),
            ("1e3", "1e3"),
            ("1E3", "1e3"),
            ("1e-3", "1e-3"),
            ("1000e0", "1e3"),
            ("+1", "1"),
            ("-1", "-1"),
            ("-0.5", "-500m"),
            ("1.", "1"),
            (".5", "500m"),
        ];
        for (input, want) in cases {
            assert_eq!(canonical(input).as_deref(), Ok(want), "{input}");
        }
    }

    #[test]
    fn canonical_is_idempotent() {
        for input in ["0.5", "1024Mi", "1.5Gi", "129e6", "100u", "3E"] {
            let once = canonical(input).expect("parses");
            assert_eq!(canonical(&once).as_deref(), Ok(once.as_str()), "{input}");
        }
    }

    #[test]
    fn errors_name_the_problem() {
        assert!(matches!(canonical(""), Err(QuantityError::Syntax(_))));
        assert!(matches!(canonical("abc"), Err(QuantityError::Syntax(_))));
        assert!(matches!(canonical("1.2.3"), Err(QuantityError::Syntax(_))));
        assert!(matches!(canonical("1Qi"), Err(QuantityError::Suffix(_))));
        assert!(matches!(canonical("1 Mi"), Err(QuantityError::Suffix(_))));
        assert!(matches!(
            canonical("99999999999999999999999999999999999999999"),
            Err(QuantityError::Range(_))
        ));
        assert_eq!(canonical_or_same("nonsense"), "nonsense");
    }
}
