//! The Curves tab's controls in a real browser, on curves written with trainctl's own event
//! writer (no TensorFlow needed): the smoothing slider changes the line drawn and keeps the raw
//! one, the log toggle changes the y axis, and another job's runs join the charts when compared.

use std::path::Path;

use serde_json::{Value, json};
use trainctl_cli_harness::manifest::{Replicas, tfjob};
use trainctl_cli_harness::server::Server;
use trainctl_events::EventWriter;

use super::browser::Browser;
use super::{address, submit};

/// Submits a job that sleeps, and writes its `loss` into its own event-file directory, in the
/// run `train`: `value(step)` for steps 0 to 40.
fn job_with_loss(server: &Server, name: &str, value: impl Fn(u8) -> f32) {
    submit(
        server,
        &tfjob(name, "", &[Replicas::workers(1, "sleep 60")]),
    );
    let (status, view) = server.job(name);
    assert_eq!(status, 200, "{view}");
    let uid = view["uid"].as_str().expect("a uid");
    let dir = server.state_dir().join("tensorboard").join(uid);
    write_scalars(
        &dir.join("train"),
        "loss",
        (0..=40).map(|step| (step, value(step))),
    );
}

fn write_scalars(dir: &Path, tag: &str, points: impl Iterator<Item = (u8, f32)>) {
    let mut writer = EventWriter::create(dir).expect("an event file");
    for (step, value) in points {
        writer
            .scalar(tag, step.into(), 1e9 + f64::from(step), value)
            .expect("write");
    }
    writer.flush().expect("flush");
}

/// A loss from 1 down to 1e-4, a decade every 10 steps.
fn falling(step: u8) -> f32 {
    10_f32.powf(-f32::from(step) / 10.0)
}

/// The `data-*` attribute `name` of the chart of `tag`, once it is there.
async fn chart_attribute(browser: &Browser, tag: &str, name: &str) -> String {
    let text = browser
        .until(
            &format!("the {tag} chart's {name}"),
            &format!(
                "const e = document.querySelector('div.chart[data-tag=\"{tag}\"]'); \
                 return e && e.getAttribute('data-{name}');"
            ),
        )
        .await;
    text.as_str().expect("text").to_owned()
}

/// The `data-*` attribute `name` of the chart of `tag`, as JSON, once it is there.
async fn chart_data(browser: &Browser, tag: &str, name: &str) -> Value {
    serde_json::from_str(&chart_attribute(browser, tag, name).await).expect("JSON")
}

/// Sets the range input `css` to `value` as a user's drag does (an `input` event).
async fn slide(browser: &Browser, css: &str, value: &str) {
    browser.click(css).await;
    browser
        .client
        .execute(
            &format!(
                "const e = document.querySelector({css:?}); e.value = {value:?}; \
                 e.dispatchEvent(new Event('input', {{bubbles: true}}));"
            ),
            Vec::new(),
        )
        .await
        .expect("slide");
}

#[tokio::test]
#[ignore = "needs chromium and chromedriver: run through ./scripts/test"]
async fn the_smoothing_slider_smooths_the_line_and_keeps_the_raw_one() {
    let server = Server::start(&[]);
    job_with_loss(&server, "noisy", |step| {
        // Down by 0.01 a step, and up by 0.5 on every fifth step.
        1.0 - f32::from(step) / 100.0 + if step % 5 == 0 { 0.5 } else { 0.0 }
    });
    let browser = Browser::start().await;
    browser
        .open(&address(&server, "#/jobs/default/tfjobs/noisy/curves"))
        .await;
    // Unsmoothed, the last value drawn is the last written: step 40, a fifth step.
    let raw = chart_data(&browser, "loss", "last").await;
    assert!(
        (raw["train"].as_f64().expect("a value") - 1.1).abs() < 1e-6,
        "{raw}"
    );

    slide(&browser, "#smoothing", "0.9").await;
    let smoothed = browser
        .until(
            "the smoothed line",
            "const e = document.querySelector('div.chart[data-tag=\"loss\"]'); \
             const last = JSON.parse(e.dataset.last).train; \
             return Math.abs(last - 1.1) > 1e-3 && last;",
        )
        .await;
    // The moving average of 0.9 weight, debiased, of the values written: below the spike.
    let expected = {
        let (mut average, mut weight) = (0.0_f64, 1.0_f64);
        for step in 0..=40_u8 {
            let value =
                f64::from(1.0 - f32::from(step) / 100.0 + if step % 5 == 0 { 0.5 } else { 0.0 });
            average = average * 0.9 + 0.1 * value;
            weight *= 0.9;
        }
        average / (1.0 - weight)
    };
    assert!(
        (smoothed.as_f64().expect("a value") - expected).abs() < 1e-4,
        "{smoothed} (expected {expected})"
    );
    // The raw line is still drawn, faint: a second series, named once in the legend.
    let raw_lines = browser
        .until(
            "the raw line",
            "return document.querySelectorAll('div.chart[data-tag=\"loss\"] .u-legend tr.raw').length;",
        )
        .await;
    assert_eq!(raw_lines, json!(1));
    browser.screenshot("curves-smoothed").await;

    // The setting stays for the next page.
    browser.client.refresh().await.expect("reload");
    let kept = browser
        .until(
            "the slider",
            "return document.querySelector('#smoothing')?.value;",
        )
        .await;
    assert_eq!(kept, json!("0.9"));
    browser.close().await;
}

#[tokio::test]
#[ignore = "needs chromium and chromedriver: run through ./scripts/test"]
async fn the_log_toggle_puts_the_y_axis_in_decades() {
    let server = Server::start(&[]);
    job_with_loss(&server, "decades", falling);
    let browser = Browser::start().await;
    browser
        .open(&address(&server, "#/jobs/default/tfjobs/decades/curves"))
        .await;
    assert_eq!(chart_attribute(&browser, "loss", "y-scale").await, "linear");
    let linear = y_ticks(&browser).await;
    assert!(linear.contains(&0.0), "{linear:?}");

    browser.click("#log-scale").await;
    browser
        .until(
            "the log axis",
            "return document.querySelector('div.chart[data-tag=\"loss\"]')?.dataset.yScale === 'log';",
        )
        .await;
    let log = y_ticks(&browser).await;
    let decades: Vec<f64> = log.iter().map(|tick| tick.log10().round()).collect();
    assert!(
        decades.contains(&-4.0) && decades.contains(&0.0),
        "the ticks span 1e-4 to 1: {log:?}"
    );
    for tick in &log {
        let mantissa = tick / 10_f64.powf(tick.log10().floor());
        assert!(
            (1.0..10.0).contains(&mantissa),
            "a log axis has no tick at or below 0: {log:?}"
        );
    }
    browser.screenshot("curves-log").await;
    browser.close().await;
}

/// The y axis' ticks of the `loss` chart, as drawn last.
async fn y_ticks(browser: &Browser) -> Vec<f64> {
    let text = browser
        .until(
            "the y ticks",
            "return document.querySelector('div.chart[data-tag=\"loss\"] .uplot')?.dataset.yTicks;",
        )
        .await;
    serde_json::from_str(text.as_str().expect("text")).expect("JSON")
}

#[tokio::test]
#[ignore = "needs chromium and chromedriver: run through ./scripts/test"]
async fn another_jobs_runs_join_the_charts_when_compared() {
    let server = Server::start(&[]);
    job_with_loss(&server, "lr-high", falling);
    job_with_loss(&server, "lr-low", |step| 1.0 - f32::from(step) / 50.0);
    let browser = Browser::start().await;
    browser
        .open(&address(&server, "#/jobs/default/tfjobs/lr-high/curves"))
        .await;
    assert_eq!(
        chart_data(&browser, "loss", "points").await,
        json!({ "train": 41 })
    );

    browser.click("#compare summary").await;
    browser.click("input[data-compare=\"tfjobs/lr-low\"]").await;
    let both = browser
        .until(
            "both jobs' runs",
            "const e = document.querySelector('div.chart[data-tag=\"loss\"]'); \
             return e && Object.keys(JSON.parse(e.dataset.points)).length === 2 && e.dataset.points;",
        )
        .await;
    let both: Value = serde_json::from_str(both.as_str().expect("text")).expect("JSON");
    assert_eq!(both, json!({ "lr-high/train": 41, "lr-low/train": 41 }));
    // Each job's run in a colour of its own, named in the legend.
    let legend = browser
        .until(
            "the legend",
            "const rows = document.querySelectorAll('div.chart[data-tag=\"loss\"] .u-legend tr.u-series:not(.raw)'); \
             return rows.length === 3 && [...rows].slice(1).map(r => \
                 [r.querySelector('.u-label').textContent, r.querySelector('.u-marker').style.borderColor]);",
        )
        .await;
    let legend = legend.as_array().expect("rows");
    assert_eq!(legend[0][0], "lr-high/train", "{legend:?}");
    assert_eq!(legend[1][0], "lr-low/train", "{legend:?}");
    assert_ne!(legend[0][1], legend[1][1], "{legend:?}");
    browser.screenshot("curves-compared").await;

    // Unchecked, the other job's run leaves.
    browser.click("input[data-compare=\"tfjobs/lr-low\"]").await;
    browser
        .until(
            "the job's own run alone",
            "const e = document.querySelector('div.chart[data-tag=\"loss\"]'); \
             return e && e.dataset.points === '{\"train\":41}';",
        )
        .await;
    browser.close().await;
}
