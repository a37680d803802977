//! Kubernetes resource quantities (`500m`, `2Gi`, `1e3`): parsed exactly, summed, converted to
//! integers and printed in Kubernetes' canonical form.
//!
//! A quantity is `<sign><digits>[.<digits>]<suffix>` where the suffix is decimal (`n u m k M G T P
//! E`), binary (`Ki Mi Gi Ti Pi Ei`) or an exponent (`e3`, `E-2`). Amounts are kept in nano-units,
//! the finest Kubernetes has, rounding anything finer up as Kubernetes does.

use std::fmt;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// Nano-units per unit.
const NANOS_PER_UNIT: i128 = 1_000_000_000;
/// Nano-units per milli-unit.
const NANOS_PER_MILLI: i128 = 1_000_000;

/// Binary suffixes, each 1024 times the previous.
const BINARY_SUFFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
/// Decimal suffixes from `n` (10^-9) to `E` (10^18), each 1000 times the previous.
const DECIMAL_SUFFIXES: [&str; 10] = ["n", "u", "m", "", "k", "M", "G", "T", "P", "E"];

/// How a quantity is printed; a sum is printed like its first non-zero term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// `k`, `M`, `m`, ... (and no suffix).
    DecimalSI,
    /// `Ki`, `Mi`, `Gi`, ...
    BinarySI,
    /// `1e3`.
    DecimalExponent,
}

/// A parsed quantity, exact to the nano-unit, that remembers how it was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Amount {
    nanos: i128,
    format: Format,
}

impl Amount {
    /// Zero.
    pub const ZERO: Amount = Amount {
        nanos: 0,
        format: Format::DecimalSI,
    };
}

/// A string that is not a Kubernetes quantity, or one too large or negative for a resource.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{text}` is not a valid resource quantity ({reason}); write e.g. `500m`, `2`, `1.5Gi` or `1e3`"
)]
pub struct InvalidQuantity {
    /// The quantity as written.
    pub text: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// Parses a quantity into nano-units (`1` → 10⁹, `1m` → 10⁶).
pub fn parse_nanos(text: &str) -> Result<i128, InvalidQuantity> {
    Amount::parse(text).map(Amount::nanos)
}

impl Amount {
    /// Parses `<sign><digits>[.<digits>]<suffix>`, exactly, as Kubernetes does.
    pub fn parse(text: &str) -> Result<Amount, InvalidQuantity> {
        let invalid = |reason| InvalidQuantity {
            text: text.to_owned(),
            reason,
        };
        let (negative, unsigned) = match text.as_bytes().first() {
            None => return Err(invalid("it is empty")),
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            Some(_) => (false, text),
        };
        let number_len = unsigned
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(unsigned.len());
        let (number, suffix) = unsigned.split_at(number_len);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return Err(invalid("it does not start with a number"));
        }
        let (format, power_of_two, suffix_exponent) =
            parse_suffix(suffix).ok_or_else(|| invalid("unknown suffix"))?;
        let too_large = || invalid("it is too large");
        let digits = format!("{whole}{fraction}");
        let digits = digits.trim_start_matches('0');
        let mantissa: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| too_large())?
        };
        let fraction_len = i32::try_from(fraction.len()).map_err(|_| too_large())?;
        let exponent = suffix_exponent - fraction_len + 9;
        let scaled = mantissa
            .checked_mul(1_i128.checked_shl(power_of_two).ok_or_else(too_large)?)
            .ok_or_else(too_large)?;
        let nanos = if mantissa == 0 {
            0
        } else if exponent >= 0 {
            10_i128
                .checked_pow(exponent.unsigned_abs())
                .and_then(|power| scaled.checked_mul(power))
                .ok_or_else(too_large)?
        } else {
            // Finer than a nano-unit: round up, as Kubernetes does.
            match 10_i128.checked_pow(exponent.unsigned_abs()) {
                Some(divisor) => ceil_div(scaled, divisor),
                None => 1,
            }
        };
        Ok(Amount {
            nanos: if negative { -nanos } else { nanos },
            format,
        })
    }

    /// The amount in nano-units.
    #[must_use]
    pub fn nanos(self) -> i128 {
        self.nanos
    }

    /// The sum, printed like `self` unless `self` is zero; `None` on overflow.
    #[must_use]
    pub fn checked_add(self, other: Amount) -> Option<Amount> {
        Some(Amount {
            nanos: self.nanos.checked_add(other.nanos)?,
            format: if self.nanos == 0 {
                other.format
            } else {
                self.format
            },
        })
    }
}

/// `(format, power of two, power of ten)` of a suffix, `None` when it is not one.
fn parse_suffix(suffix: &str) -> Option<(Format, u32, i32)> {
    let decimal = |exponent| Some((Format::DecimalSI, 0, exponent));
    let binary = |power| Some((Format::BinarySI, power, 0));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        _ => {
            let exponent = suffix
                .strip_prefix('e')
                .or_else(|| suffix.strip_prefix('E'))?;
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // Beyond ±1000 nothing fits an i128 anyway; clamp so the arithmetic cannot overflow.
            let value: i32 = exponent.parse().unwrap_or(if exponent.starts_with('-') {
                -1000
            } else {
                1000
            });
            Some((Format::DecimalExponent, 0, value.clamp(-1000, 1000)))
        }
    }
}

/// `numerator / denominator` rounded towards positive infinity (`denominator > 0`).
fn ceil_div(numerator: i128, denominator: i128) -> i128 {
    numerator.div_euclid(denominator) + i128::from(numerator.rem_euclid(denominator) != 0)
}

/// Parses a resource amount that must not be negative, in nano-units.
fn non_negative_nanos(quantity: &Quantity) -> Result<i128, InvalidQuantity> {
    let nanos = parse_nanos(&quantity.0)?;
    if nanos < 0 {
        return Err(InvalidQuantity {
            text: quantity.0.clone(),
            reason: "it is negative",
        });
    }
    Ok(nanos)
}

/// Converts non-negative nano-units to `u64` in steps of `per`, rounding up.
fn to_u64(quantity: &Quantity, nanos: i128, per: i128) -> Result<u64, InvalidQuantity> {
    u64::try_from(ceil_div(nanos, per)).map_err(|_| InvalidQuantity {
        text: quantity.0.clone(),
        reason: "it is too large",
    })
}

/// The quantity in milli-units, rounded up (`0.5` → 500, `1n` → 1): CPU in millicores.
pub fn to_millis(quantity: &Quantity) -> Result<u64, InvalidQuantity> {
    to_u64(quantity, non_negative_nanos(quantity)?, NANOS_PER_MILLI)
}

/// The quantity in whole units, rounded up (`1Ki` → 1024, `500m` → 1): bytes, GPUs.
pub fn to_units(quantity: &Quantity) -> Result<u64, InvalidQuantity> {
    to_u64(quantity, non_negative_nanos(quantity)?, NANOS_PER_UNIT)
}

impl fmt::Display for Amount {
    /// Kubernetes' canonical form: the largest suffix that keeps the number an integer.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.nanos == 0 {
            return f.write_str("0");
        }
        let whole_units = self.nanos % NANOS_PER_UNIT == 0;
        let binary = self.format == Format::BinarySI
            && whole_units
            && self.nanos.abs() >= 1024 * NANOS_PER_UNIT;
        if binary {
            let mut number = self.nanos / NANOS_PER_UNIT;
            let mut step = 0;
            while step + 1 < BINARY_SUFFIXES.len() && number % 1024 == 0 {
                number /= 1024;
                step += 1;
            }
            return write!(f, "{number}{}", BINARY_SUFFIXES[step]);
        }
        let mut number = self.nanos;
        let mut step = 0;
        while step + 1 < DECIMAL_SUFFIXES.len() && number % 1000 == 0 {
            number /= 1000;
            step += 1;
        }
        if self.format == Format::DecimalExponent {
            let exponent = step as i32 * 3 - 9;
            if exponent == 0 {
                write!(f, "{number}")
            } else {
                write!(f, "{number}e{exponent}")
            }
        } else {
            write!(f, "{number}{}", DECIMAL_SUFFIXES[step])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nanos(text: &str) -> i128 {
        parse_nanos(text).unwrap_or_else(|error| panic!("{error}"))
    }

    #[test]
    fn plain_integers_are_units() {
        assert_eq!(nanos("2"), 2 * NANOS_PER_UNIT);
        assert_eq!(nanos("0"), 0);
        assert_eq!(nanos("+3"), 3 * NANOS_PER_UNIT);
        assert_eq!(nanos("-3"), -3 * NANOS_PER_UNIT);
    }

    #[test]
    fn decimal_suffixes_are_powers_of_ten() {
        let table = [
            ("1n", 1),
            ("1u", 1_000),
            ("1m", 1_000_000),
            ("1k", 1_000 * NANOS_PER_UNIT),
            ("1M", 1_000_000 * NANOS_PER_UNIT),
            ("1G", 10_i128.pow(9) * NANOS_PER_UNIT),
            ("1T", 10_i128.pow(12) * NANOS_PER_UNIT),
            ("1P", 10_i128.pow(15) * NANOS_PER_UNIT),
            ("1E", 10_i128.pow(18) * NANOS_PER_UNIT),
        ];
        for (text, expected) in table {
            assert_eq!(nanos(text), expected, "{text}");
        }
    }

    #[test]
    fn binary_suffixes_are_powers_of_1024() {
        let table = [
            ("1Ki", 1_i128 << 10),
            ("1Mi", 1 << 20),
            ("1Gi", 1 << 30),
            ("1Ti", 1 << 40),
            ("1Pi", 1 << 50),
            ("1Ei", 1 << 60),
            ("1.5Gi", 3 << 29),
        ];
        for (text, units) in table {
            assert_eq!(nanos(text), units * NANOS_PER_UNIT, "{text}");
        }
    }

    #[test]
    fn exponents_are_decimal() {
        assert_eq!(nanos("1e3"), 1_000 * NANOS_PER_UNIT);
        assert_eq!(nanos("1E3"), 1_000 * NANOS_PER_UNIT);
        assert_eq!(nanos("1e+3"), 1_000 * NANOS_PER_UNIT);
        assert_eq!(nanos("25e-3"), 25_000_000);
    }

    #[test]
    fn fractions_are_exact() {
        assert_eq!(nanos("0.5"), 500_000_000);
        assert_eq!(nanos(".5"), 500_000_000);
        assert_eq!(nanos("1."), NANOS_PER_UNIT);
        assert_eq!(nanos("2.5m"), 2_500_000);
    }

    #[test]
    fn amounts_finer_than_a_nano_round_up() {
        assert_eq!(nanos("0.1n"), 1);
        assert_eq!(nanos("1e-30"), 1);
    }

    #[test]
    fn malformed_quantities_are_errors() {
        for text in [
            "", "m", ".", "1..2", "1.2.3", "1K", "1mi", "1e", "1e+", "1 Gi", " 1", "1Gi ", "abc",
        ] {
            assert!(parse_nanos(text).is_err(), "{text:?} parsed");
        }
    }

    #[test]
    fn huge_quantities_are_errors_not_overflows() {
        assert!(parse_nanos("1e1000").is_err());
        assert!(parse_nanos("99999999999999999999999999999999999999999Ei").is_err());
    }

    #[test]
    fn millis_round_up() {
        assert_eq!(to_millis(&Quantity("500m".into())), Ok(500));
        assert_eq!(to_millis(&Quantity("2".into())), Ok(2_000));
        assert_eq!(to_millis(&Quantity("1n".into())), Ok(1));
        assert_eq!(to_millis(&Quantity("0.0015".into())), Ok(2));
    }

    #[test]
    fn units_round_up() {
        assert_eq!(to_units(&Quantity("1Gi".into())), Ok(1 << 30));
        assert_eq!(to_units(&Quantity("1.5k".into())), Ok(1_500));
        assert_eq!(to_units(&Quantity("500m".into())), Ok(1));
    }

    #[test]
    fn negative_resource_amounts_are_errors() {
        let error = to_units(&Quantity("-1Gi".into())).unwrap_err();
        assert_eq!(error.reason, "it is negative");
    }

    #[test]
    fn error_names_the_quantity_and_shows_valid_forms() {
        let error = parse_nanos("12 cores").unwrap_err();
        assert_eq!(
            error.to_string(),
            "`12 cores` is not a valid resource quantity (unknown suffix); write e.g. `500m`, `2`, `1.5Gi` or `1e3`"
        );
    }

    fn canonical(text: &str) -> String {
        Amount::parse(text).expect("valid quantity").to_string()
    }

    fn sum(terms: &[&str]) -> String {
        terms
            .iter()
            .map(|t| Amount::parse(t).expect("valid quantity"))
            .try_fold(Amount::ZERO, Amount::checked_add)
            .expect("no overflow")
            .to_string()
    }

    #[test]
    fn quantities_print_in_canonical_form() {
        let cases = [
            ("1", "1"),
            ("0", "0"),
            ("500m", "500m"),
            ("0.5", "500m"),
            (".5", "500m"),
            ("1000", "1k"),
            ("1500", "1500"),
            ("2Gi", "2Gi"),
            ("1.5Gi", "1536Mi"),
            ("1024", "1024"),
            ("2048Ki", "2Mi"),
            ("512Mi", "512Mi"),
            ("100Ki", "100Ki"),
            ("1e3", "1e3"),
            ("1E", "1E"),
            ("+2", "2"),
            ("-1500m", "-1500m"),
            ("1n", "1n"),
        ];
        for (text, expected) in cases {
            assert_eq!(canonical(text), expected, "{text}");
        }
    }

    #[test]
    fn binary_quantity_below_1024_prints_as_decimal() {
        assert_eq!(canonical("0.5Ki"), "512");
    }

    #[test]
    fn sums_are_exact_and_keep_the_first_terms_format() {
        assert_eq!(sum(&["500m", "1500m"]), "2");
        assert_eq!(sum(&["2", "500m"]), "2500m");
        assert_eq!(sum(&["1Gi", "512Mi"]), "1536Mi");
        assert_eq!(sum(&["512Mi", "512Mi"]), "1Gi");
        assert_eq!(sum(&["1G", "1Gi"]), "2073741824");
    }
}
