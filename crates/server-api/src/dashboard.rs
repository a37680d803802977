//! The answers the dashboard reads besides jobs and the machine: what it may do here
//! ([`DashboardInfo`]), its login ([`LoginCode`], [`LoginRequest`], [`LoginToken`]) and a job's
//! scalar curves ([`ScalarsView`]); and the queries of a job's logs ([`LogsQuery`]) and curves
//! ([`ScalarsQuery`]).

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
    /// Whether the Machine page is offered; absent: it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<bool>,
    /// Whether actions (suspend, resume, delete) are offered.
    pub actions: bool,
    /// The server's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The cluster shown, when the data comes from one (`trainctl --kube dashboard`).
    #[serde(flatten)]
    pub cluster: Option<ClusterShown>,
}

/// The cluster a dashboard shows, and which of its namespaces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClusterShown {
    /// The kubeconfig context, else the API server's URL.
    pub context: String,
    /// The namespace shown; `null`: every namespace.
    pub namespace: Option<String>,
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

/// The most points of a curve a request may ask for.
pub const MAX_POINTS: usize = 20_000;

/// How many points of a curve are sent when the request does not say.
pub const DEFAULT_POINTS: usize = 2_000;

/// The query of a job's curves (`.../scalars` and its event stream).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct ScalarsQuery {
    /// The most points of each series (at least 10, at most [`MAX_POINTS`]).
    pub points: Option<usize>,
}

impl ScalarsQuery {
    /// How many points each series may have: [`DEFAULT_POINTS`] when not asked, at least 10,
    /// at most [`MAX_POINTS`].
    #[must_use]
    pub fn points(self) -> usize {
        self.points.unwrap_or(DEFAULT_POINTS).clamp(10, MAX_POINTS)
    }
}

/// The query of a job's logs (`.../logs`): the Kubernetes pod log API's parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogsQuery {
    /// One replica (`worker-0`); every replica, prefixed, when omitted.
    pub replica: Option<String>,
    /// Stream until the job has finished.
    #[serde(default)]
    pub follow: bool,
    /// Only the last lines of each log; negative: all.
    pub tail_lines: Option<i64>,
    /// Only the lines of the last seconds.
    pub since_seconds: Option<i64>,
    /// Each line after its time.
    #[serde(default)]
    pub timestamps: bool,
    /// Each replica's run before its last restart.
    #[serde(default)]
    pub previous: bool,
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
    use serde_json::json;

    use super::{ClusterShown, DashboardInfo, ScalarsQuery, ScalarsView, SeriesView, Source};

    #[test]
    fn a_clusters_info_says_its_context_and_namespace_a_servers_neither() {
        let mut info = DashboardInfo {
            source: Source::Local,
            curves: true,
            machine: None,
            actions: true,
            version: None,
            cluster: None,
        };
        let local = json!({"source": "local", "curves": true, "actions": true});
        assert_eq!(serde_json::to_value(&info).expect("encoded"), local);
        assert_eq!(
            serde_json::from_value::<DashboardInfo>(local).expect("decoded"),
            info
        );
        info.source = Source::Kube;
        info.machine = Some(false);
        info.cluster = Some(ClusterShown {
            context: "kind".to_owned(),
            namespace: None,
        });
        let kube = json!({"source": "kube", "curves": true, "machine": false, "actions": true,
                          "context": "kind", "namespace": null});
        assert_eq!(serde_json::to_value(&info).expect("encoded"), kube);
        assert_eq!(
            serde_json::from_value::<DashboardInfo>(kube).expect("decoded"),
            info
        );
    }

    #[test]
    fn points_are_two_thousand_unless_asked_and_kept_within_bounds() {
        let asked = |points| ScalarsQuery { points }.points();
        assert_eq!(
            [None, Some(0), Some(500), Some(1 << 30)].map(asked),
            [2_000, 10, 500, 20_000]
        );
    }

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
