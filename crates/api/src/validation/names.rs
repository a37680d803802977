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

/// The longest key of a ConfigMap or Secret.
pub const MAX_KEY: usize = 253;

/// Checks a key of a ConfigMap's or Secret's data as the API server does: letters, digits, `-`,
/// `_` and `.`, at most 253 characters, neither `.` nor starting with `..`. A key is also the
/// name of its file in a volume, so a key with a `/` or `..` could reach out of it.
pub fn config_map_key(key: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err("a key must not be empty".to_owned());
    }
    if key.len() > MAX_KEY {
        return Err(format!("{} characters, the limit is {MAX_KEY}", key.len()));
    }
    if let Some(bad) = key
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(format!(
            "`{bad}` is not allowed: a key holds letters, digits, `-`, `_` and `.`"
        ));
    }
    if key == "." || key.starts_with("..") {
        return Err("a key must not be `.` nor start with `..`".to_owned());
    }
    Ok(())
}

/// Checks a path inside a volume (a `subPath`, an item's `path`) as the API server does: relative,
/// without a `..` part.
pub(crate) fn local_path(path: &str) -> Result<(), String> {
    if path.starts_with('/') {
        return Err("it must be a relative path inside the volume".to_owned());
    }
    if path.split('/').any(|part| part == "..") {
        return Err("it must not contain `..`: a path stays inside its volume".to_owned());
    }
    Ok(())
}
