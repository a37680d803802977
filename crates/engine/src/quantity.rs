//! Exact sums of Kubernetes resource quantities (`500m`, `2Gi`, `1e3`), printed in Kubernetes'
//! canonical form, as a PodGroup's `minResources` needs them.

use std::fmt;

/// Nano-units per unit: quantities are exact down to `1n`, like Kubernetes'.
const NANOS_PER_UNIT: i128 = 1_000_000_000;

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

/// A parsed quantity, exact to the nano-unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Amount {
    nanos: i128,
    format: Format,
}

impl Amount {
    /// Parses `<sign><digits>[.<digits>]<suffix>`; `None` for anything else or out of range.
    pub(crate) fn parse(text: &str) -> Option<Amount> {
        let text = text.trim();
        let (negative, unsigned) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let number_len = unsigned
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(unsigned.len());
        let (number, suffix) = unsigned.split_at(number_len);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return None;
        }
        let digits = format!("{whole}{fraction}");
        let digits = digits.trim_start_matches('0');
        let mantissa: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().ok()?
        };
        let (format, power_of_two, suffix_exponent) = parse_suffix(suffix)?;
        let fraction_len = i32::try_from(fraction.len()).ok()?;
        let exponent = suffix_exponent.checked_sub(fraction_len)?.checked_add(9)?;
        let scaled = mantissa.checked_mul(1_i128.checked_shl(power_of_two)?)?;
        let nanos = if exponent >= 0 {
            scaled.checked_mul(10_i128.checked_pow(exponent.unsigned_abs())?)?
        } else {
            // Finer than a nano-unit: round up, as Kubernetes does.
            let divisor = 10_i128.checked_pow(exponent.unsigned_abs())?;
            scaled.div_euclid(divisor) + i128::from(scaled.rem_euclid(divisor) != 0)
        };
        Some(Amount {
            nanos: if negative { -nanos } else { nanos },
            format,
        })
    }

    /// The sum, printed like `self` unless `self` is zero; `None` on overflow.
    pub(crate) fn checked_add(self, other: Amount) -> Option<Amount> {
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

/// `(format, power of two, power of ten)` of a suffix.
fn parse_suffix(suffix: &str) -> Option<(Format, u32, i32)> {
    let decimal = |exponent| Some((Format::DecimalSI, 0, exponent));
    let binary = |power| Some((Format::BinarySI, power, 0));
    match suffix {
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "" => decimal(0),
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
            let exponent = suffix.strip_prefix(['e', 'E'])?;
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some((Format::DecimalExponent, 0, exponent.parse().ok()?))
        }
    }
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

    fn canonical(text: &str) -> String {
        Amount::parse(text).expect("valid quantity").to_string()
    }

    fn sum(terms: &[&str]) -> String {
        terms
            .iter()
            .map(|t| Amount::parse(t).expect("valid quantity"))
            .try_fold(
                Amount {
                    nanos: 0,
                    format: Format::DecimalSI,
                },
                Amount::checked_add,
            )
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
    fn invalid_quantities_do_not_parse() {
        for text in [
            "", "abc", "1.2.3", "1Zi", "1e", "1e+", ".", "-", "1 Gi", "1e999",
        ] {
            assert_eq!(Amount::parse(text), None, "{text}");
        }
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
