//! A namespace given apart from a manifest (`-n`, the server's `namespace=` and its paths):
//! a DNS-1123 label, checked as a manifest's own `metadata.namespace` is.

use crate::validation::dns_label;

/// Checks that `namespace` is a DNS-1123 label; the error says what is wrong and what a
/// namespace is (one line: control characters in the namespace are escaped).
pub fn check_namespace(namespace: &str) -> Result<(), String> {
    let problem = if namespace.is_empty() {
        "the namespace is empty".to_owned()
    } else {
        match dns_label(namespace, false) {
            Ok(()) => return Ok(()),
            Err(problem) => format!("`{namespace}` is not a valid namespace: {problem}"),
        }
    };
    let message = format!(
        "{problem}; a namespace is a DNS-1123 label: lowercase letters, digits and `-`, starting \
         and ending with a letter or digit, at most 63 characters"
    );
    Err(message
        .chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::check_namespace;

    #[test]
    fn a_namespace_is_a_dns_1123_label() {
        for valid in ["a", "team-a", "0", "x1", &"n".repeat(63)] {
            assert_eq!(check_namespace(valid), Ok(()), "{valid}");
        }
        let rule = "a namespace is a DNS-1123 label: lowercase letters, digits and `-`, starting \
                    and ending with a letter or digit, at most 63 characters";
        for (invalid, problem) in [
            ("", "the namespace is empty".to_owned()),
            (
                "../../etc",
                "`../../etc` is not a valid namespace: `.` is not allowed".to_owned(),
            ),
            (
                "a;touch x",
                "`a;touch x` is not a valid namespace: `;` is not allowed".to_owned(),
            ),
            (
                "Team",
                "`Team` is not a valid namespace: `T` is not allowed".to_owned(),
            ),
            (
                "-a",
                "`-a` is not a valid namespace: it must start and end with a letter or digit"
                    .to_owned(),
            ),
            (
                "a\n",
                "`a\\n` is not a valid namespace: `\\n` is not allowed".to_owned(),
            ),
            (
                &"n".repeat(64),
                format!(
                    "`{}` is not a valid namespace: 64 characters, the limit is 63",
                    "n".repeat(64)
                ),
            ),
        ] {
            assert_eq!(
                check_namespace(invalid),
                Err(format!("{problem}; {rule}")),
                "{invalid:?}"
            );
        }
    }
}
