//! The parsers of flag values that several commands share: checked before anything is read or
//! contacted, so that clap names the flag in the error and exits 2.

use trainctl_api::manifest::check_namespace;
use trainctl_local::claims::{VolumeBinding, VolumeBindingError};

/// A namespace given on the command line (`-n`, `--namespace`): a DNS-1123 label, checked before
/// anything is read or contacted (clap names the flag in the error, and exits 2).
pub(super) fn namespace_name(text: &str) -> Result<String, String> {
    check_namespace(text).map(|()| text.to_owned())
}

/// A `--volume`: `[NAMESPACE/]CLAIM=PATH`, PATH an existing directory.
pub(super) fn volume_binding(text: &str) -> Result<VolumeBinding, String> {
    VolumeBinding::parse(text).map_err(|error| match error {
        VolumeBindingError::Syntax => "expected CLAIM=PATH (e.g. --volume \
             training-data-pvc=/srv/datasets/mnist), or NAMESPACE/CLAIM=PATH"
            .to_owned(),
        other => other.to_string(),
    })
}
