//! The answers the dashboard reads besides jobs and the machine: what it may do here
//! ([`DashboardInfo`]), its login ([`LoginCode`], [`LoginRequest`], [`LoginToken`]) and a job's
//! scalar curves ([`ScalarsView`]).

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use crate::{Word, words};

/// What the dashboard shows and may do with this server (`GET /api/v1/dashboard`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DashboardInfo {
    /// Where the data comes from.
    pub source: Source,
    /// Whether a job's curves are offered.
    pub curves: bool,
    /// Whether actions (suspend, resume, delete) are offered.
    pub actions: bool,
    /// The server's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// Where the dashboard's data comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// A `trainctl server`'s state directory.
    Local,
    /// A Kubernetes cluster.
    Kube,
}

/// A one-time login code for the dashboard's address (`POST /api/v1/dashboard/codes`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoginCode {
    /// The code, for `/#code=...`.
    pub code: String,
    /// How long it may be used.
    pub expires_in_seconds: u64,
}

/// The body of `POST /api/v1/dashboard/login`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LoginRequest {
    /// A login code the server printed or issued.
    pub code: String,
}

/// The answer to a login: the token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LoginToken {
    /// The bearer token.
    pub token: String,
}

/// A job's curves, from its TensorBoard event files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScalarsView {
    /// Where event files were looked for, in order; the series come from the first that has any.
    pub roots: Vec<PathBuf>,
    /// Each series of the first place that has any, by run then tag.
    pub series: Vec<SeriesView>,
    /// What could not be read, each with its place.
    pub problems: Vec<String>,
    /// The environment variable that names the job's own directory for event files.
    #[serde(deserialize_with = "words::tensorboard_env")]
    #[schemars(schema_with = "words::tensorboard_env_schema")]
    pub env: Word,
}

/// One series: a run's tag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SeriesView {
    /// The run (its directory under the root: Keras writes `train` and `validation`).
    pub run: String,
    /// The tag (`epoch_loss`).
    pub tag: String,
    /// How many points the files hold.
    pub total: usize,
    /// `[step, wall time in seconds since the epoch, value]`, at most as many as asked for; a
    /// value that is not a number (NaN, infinite) is `null`.
    #[serde(deserialize_with = "points")]
    #[schemars(with = "Vec<[Option<f64>; 3]>")]
    pub points: Vec<[f64; 3]>,
}

/// Decodes points, `null` (how JSON writes a NaN) as NaN.
fn points<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<[f64; 3]>, D::Error> {
    let points = Vec::<[Option<f64>; 3]>::deserialize(deserializer)?;
    Ok(points
        .into_iter()
        .map(|point| point.map(|number| number.unwrap_or(f64::NAN)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::{ScalarsView, SeriesView};

    #[test]
    fn a_point_that_is_not_a_number_goes_as_null_and_comes_back_as_nan() {
        let view = ScalarsView {
            roots: vec!["/tmp/tb".into()],
            series: vec![SeriesView {
                run: "train".to_owned(),
                tag: "loss".to_owned(),
                total: 1,
                points: vec![[1.0, 2.5, f64::NAN]],
            }],
            problems: Vec::new(),
            env: "TRAINCTL_TENSORBOARD_DIR",
        };
        let text = serde_json::to_string(&view).expect("encoded");
        assert!(text.contains("[1.0,2.5,null]"), "{text}");
        let back: ScalarsView = serde_json::from_str(&text).expect("decoded");
        assert!(back.series[0].points[0][2].is_nan());
        assert_eq!(serde_json::to_string(&back).expect("encoded"), text);
    }
}
