//! The fixed vocabularies of the API's words (a job's kind and state, a replica's state, what
//! applying an object did), each as a decoder and a schema of the same words: a word the server
//! writes is a `&'static str` of its vocabulary, decoded back to that same `&'static str`, and
//! the schema enumerates exactly the words decoding accepts.
//!
//! Also the schemas of timestamps, which the API writes as RFC 3339 strings.

use schemars::{Schema, SchemaGenerator, json_schema};
use serde::de::{Error as _, Unexpected};
use serde::{Deserialize, Deserializer};
use trainctl_api::JobKind;

/// A job's states in one word, as `trainctl get` says them.
const JOB_STATES: [&str; 8] = [
    "Pending",
    "Created",
    "Running",
    "Restarting",
    "Suspended",
    "Succeeded",
    "Failed",
    "Lost",
];

/// A replica's states in one word.
const REPLICA_STATES: [&str; 7] = [
    "Pending",
    "Running",
    "CrashLoopBackOff",
    "Succeeded",
    "Failed",
    "Stopped",
    "Suspended",
];

/// What applying an object did, as kubectl says.
const ACTIONS: [&str; 2] = ["created", "configured"];

/// The word of `words` that the next string is; an error naming `what` for any other string.
fn one_of<'de, D: Deserializer<'de>>(
    deserializer: D,
    words: impl IntoIterator<Item = &'static str>,
    what: &str,
) -> Result<&'static str, D::Error> {
    let text = String::deserialize(deserializer)?;
    words
        .into_iter()
        .find(|word| *word == text)
        .ok_or_else(|| D::Error::invalid_value(Unexpected::Str(&text), &what))
}

/// A string schema of exactly `words`.
fn enumeration(words: impl IntoIterator<Item = &'static str>) -> Schema {
    let words: Vec<&str> = words.into_iter().collect();
    json_schema!({ "type": "string", "enum": words })
}

/// Decodes a job kind as manifests name it (`TFJob`).
pub fn kind<'de, D: Deserializer<'de>>(deserializer: D) -> Result<&'static str, D::Error> {
    one_of(
        deserializer,
        JobKind::ALL.map(JobKind::as_str),
        "a job kind",
    )
}

/// The schema of a job kind.
pub fn kind_schema(_: &mut SchemaGenerator) -> Schema {
    enumeration(JobKind::ALL.map(JobKind::as_str))
}

/// Decodes a job kind's plural, as the API's paths name it (`tfjobs`).
pub fn plural<'de, D: Deserializer<'de>>(deserializer: D) -> Result<&'static str, D::Error> {
    one_of(
        deserializer,
        JobKind::ALL.map(JobKind::plural),
        "a job kind's plural",
    )
}

/// The schema of a job kind's plural.
pub fn plural_schema(_: &mut SchemaGenerator) -> Schema {
    enumeration(JobKind::ALL.map(JobKind::plural))
}

/// Decodes a job's state.
pub fn job_state<'de, D: Deserializer<'de>>(deserializer: D) -> Result<&'static str, D::Error> {
    one_of(deserializer, JOB_STATES, "a job state")
}

/// The schema of a job's state.
pub fn job_state_schema(_: &mut SchemaGenerator) -> Schema {
    enumeration(JOB_STATES)
}

/// Decodes a replica's state.
pub fn replica_state<'de, D: Deserializer<'de>>(deserializer: D) -> Result<&'static str, D::Error> {
    one_of(deserializer, REPLICA_STATES, "a replica state")
}

/// The schema of a replica's state.
pub fn replica_state_schema(_: &mut SchemaGenerator) -> Schema {
    enumeration(REPLICA_STATES)
}

/// Decodes what applying an object did.
pub fn action<'de, D: Deserializer<'de>>(deserializer: D) -> Result<&'static str, D::Error> {
    one_of(deserializer, ACTIONS, "created or configured")
}

/// The schema of what applying an object did.
pub fn action_schema(_: &mut SchemaGenerator) -> Schema {
    enumeration(ACTIONS)
}

/// The environment variable naming a job's own directory for TensorBoard event files, as the
/// runner sets it.
const TENSORBOARD_DIR_ENV: &str = "TRAINCTL_TENSORBOARD_DIR";

/// Decodes the name of the environment variable for TensorBoard event files.
pub fn tensorboard_env<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<&'static str, D::Error> {
    one_of(deserializer, [TENSORBOARD_DIR_ENV], TENSORBOARD_DIR_ENV)
}

/// The schema of the name of the environment variable for TensorBoard event files.
pub fn tensorboard_env_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "const": TENSORBOARD_DIR_ENV })
}

/// The schema of a time: an RFC 3339 string.
pub fn time_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "format": "date-time" })
}

/// The schema of a time that may be `null`.
pub fn optional_time_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": ["string", "null"], "format": "date-time" })
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use crate::Word;

    /// A field of each vocabulary.
    #[derive(Debug, Deserialize)]
    struct Words {
        #[serde(deserialize_with = "super::kind")]
        kind: Word,
        #[serde(deserialize_with = "super::plural")]
        plural: Word,
        #[serde(deserialize_with = "super::job_state")]
        state: Word,
    }

    #[test]
    fn a_word_of_its_vocabulary_decodes_to_that_word() {
        let words: Words = serde_json::from_value(
            json!({ "kind": "PyTorchJob", "plural": "pytorchjobs", "state": "Lost" }),
        )
        .expect("words");
        assert_eq!(
            (words.kind, words.plural, words.state),
            ("PyTorchJob", "pytorchjobs", "Lost")
        );
    }

    #[test]
    fn a_word_outside_its_vocabulary_is_refused_with_what_was_expected() {
        let error = serde_json::from_value::<Words>(
            json!({ "kind": "tfjob", "plural": "tfjobs", "state": "Lost" }),
        )
        .expect_err("not a kind");
        assert_eq!(
            error.to_string(),
            r#"invalid value: string "tfjob", expected a job kind"#
        );
    }

    #[test]
    fn each_schema_enumerates_the_words_decoding_accepts() {
        let mut generator = schemars::SchemaGenerator::default();
        let schema = super::job_state_schema(&mut generator);
        assert_eq!(
            schema.get("enum"),
            Some(&json!(super::JOB_STATES)),
            "{schema:?}"
        );
        let kinds = super::kind_schema(&mut generator);
        assert_eq!(
            kinds.get("enum"),
            Some(&json!([
                "TFJob",
                "PyTorchJob",
                "XGBoostJob",
                "PaddleJob",
                "JAXJob",
                "MPIJob",
                "MXJob"
            ]))
        );
    }
}
