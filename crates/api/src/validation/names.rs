//! DNS names as Kubernetes checks them: labels (DNS-1123 and DNS-1035) and subdomains.

/// The longest name of a Service (a DNS-1035 label).
pub(super) const MAX_SERVICE_NAME: usize = 63;

/// Checks a DNS label: lowercase alphanumerics and `-`, alphanumeric at both ends, ≤ 63 chars;
/// a DNS-1035 label must also start with a letter.
pub(crate) fn dns_label(name: &str, dns1035: bool) -> Result<(), String> {
    if name.len() > MAX_SERVICE_NAME {
        return Err(format!(
            "{} characters, the limit is {MAX_SERVICE_NAME}",
            name.len()
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(format!("`{bad}` is not allowed"));
    }
    let first = name.chars().next().unwrap_or('-');
    if dns1035 && !first.is_ascii_lowercase() {
        return Err("it must start with a lowercase letter".into());
    }
    if first == '-' || name.ends_with('-') {
        return Err("it must start and end with a letter or digit".into());
    }
    Ok(())
}

/// Checks a DNS-1123 subdomain: dot-separated labels, at most 253 characters.
pub(crate) fn dns_subdomain(name: &str) -> Result<(), String> {
    if name.len() > 253 {
        return Err(format!("{} characters, the limit is 253", name.len()));
    }
    name.split('.').try_for_each(|label| {
        if label.is_empty() {
            Err("it has an empty part between dots".to_owned())
        } else {
            dns_label(label, false)
        }
    })
}
