//! A real browser for the dashboard's tests: Debian's `chromium`, headless, driven through
//! `chromedriver` (WebDriver) with `fantoccini`. `TRAINCTL_CHROMIUM` and `TRAINCTL_CHROMEDRIVER`
//! name other binaries; `scripts/browser-env` installs both where they are missing.
//!
//! Each browser has a fresh profile (no token kept from another test). Its screenshots go to
//! `<target>/tmp/dashboard-screenshots/` (test artefacts, not committed).

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

/// How long a page has to show what a test waits for.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// A headless Chromium and its chromedriver, killed (with their process group) when dropped.
pub struct Browser {
    driver: Child,
    /// The WebDriver session.
    pub client: Client,
}

impl Browser {
    /// Starts chromedriver on a free loopback port and a headless Chromium through it.
    pub async fn start() -> Browser {
        let chromium = binary("TRAINCTL_CHROMIUM", "/usr/bin/chromium");
        let chromedriver = binary("TRAINCTL_CHROMEDRIVER", "/usr/bin/chromedriver");
        let mut driver = Command::new(&chromedriver)
            .arg("--port=0")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {}: {error}", chromedriver.display()));
        let stdout = driver.stdout.take().expect("piped");
        let mut lines = BufReader::new(stdout).lines();
        let port = loop {
            let line = lines
                .next()
                .expect("chromedriver says its port")
                .expect("chromedriver's output");
            if let Some(rest) = line.split("started successfully on port ").nth(1) {
                break rest.trim_end_matches('.').to_owned();
            }
        };
        // The rest of its output is read away, so that it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        let capabilities = json!({
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--window-size=1280,860",
                    "--no-first-run",
                ],
            },
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!("an object")
        };
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("a browser session");
        Browser { driver, client }
    }

    /// Loads `url`.
    pub async fn open(&self, url: &str) {
        self.client.goto(url).await.expect("load the page");
    }

    /// Waits until `script` (a JavaScript function body returning a value) returns something
    /// other than `null`/`false`/`""`, and returns it; panics with `what` after [`PATIENCE`].
    pub async fn until(&self, what: &str, script: &str) -> Value {
        let started = Instant::now();
        let mut last = Value::Null;
        while started.elapsed() < PATIENCE {
            match self.client.execute(script, Vec::new()).await {
                Ok(value) if truthy(&value) => return value,
                Ok(value) => last = value,
                Err(error) => last = Value::String(error.to_string()),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.screenshot(&format!("failed-{}", what.replace(' ', "-")))
            .await;
        panic!("the page never showed {what} (last: {last})");
    }

    /// The text of the first element matching `css`, once there is one.
    pub async fn text(&self, css: &str) -> String {
        let found = self
            .until(
                &format!("an element {css}"),
                &format!("const e = document.querySelector({css:?}); return e && e.textContent;"),
            )
            .await;
        found.as_str().unwrap_or("").to_owned()
    }

    /// Waits until the first element matching `css` has the text `text` (trimmed).
    pub async fn wait_text(&self, css: &str, text: &str) {
        self.until(
            &format!("{css} saying {text}"),
            &format!(
                "const e = document.querySelector({css:?}); \
                 return !!e && e.textContent.trim() === {text:?};"
            ),
        )
        .await;
    }

    /// Clicks the first element matching `css`.
    pub async fn click(&self, css: &str) {
        self.until(
            &format!("a visible {css}"),
            &format!(
                "const e = document.querySelector({css:?}); return !!e && e.offsetParent !== null;"
            ),
        )
        .await;
        self.client
            .find(Locator::Css(css))
            .await
            .expect("the element")
            .click()
            .await
            .expect("click it");
    }

    /// Saves a screenshot of the page as `<name>.png` among the test artefacts.
    pub async fn screenshot(&self, name: &str) {
        let dir = screenshots_dir();
        let _ = std::fs::create_dir_all(&dir);
        if let Ok(png) = self.client.screenshot().await {
            let _ = std::fs::write(dir.join(format!("{name}.png")), png);
        }
    }

    /// Ends the session.
    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // chromedriver and the Chromium it started share its process group.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.driver.id())])
            .status();
        let _ = self.driver.wait();
    }
}

/// Where screenshots are saved.
pub fn screenshots_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard-screenshots")
}

fn binary(variable: &str, default: &str) -> PathBuf {
    let path = std::env::var_os(variable).map_or_else(|| PathBuf::from(default), PathBuf::from);
    assert!(
        path.exists(),
        "{} is missing: install Debian's chromium and chromium-driver (scripts/browser-env), \
         or name it with {variable}",
        path.display()
    );
    path
}

fn truthy(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => false,
        Value::String(text) => !text.is_empty(),
        _ => true,
    }
}
