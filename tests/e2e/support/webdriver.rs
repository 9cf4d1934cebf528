//! A minimal WebDriver client: just enough of the protocol to drive a headless Chromium the
//! way a user would (open a page, click, run a script, take a screenshot).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::Result;

/// A headless Chromium driven over WebDriver by chromedriver (Debian's chromium-driver).
pub struct Browser {
    driver: std::process::Child,
    base: String,
    session: String,
}

impl Browser {
    /// Starts chromedriver on a free port and opens a session whose profile lives in `profile`.
    pub fn start(profile: &Path) -> Result<Self> {
        let chromedriver = std::env::var("SFL_CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".into());
        let chromium = std::env::var("SFL_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let driver = Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| {
                format!("cannot start {chromedriver}: {e}; run .ci/setup (Debian's chromium and chromium-driver)")
            })?;
        let base = format!("http://127.0.0.1:{port}");
        let mut browser = Browser {
            driver,
            base,
            session: String::new(),
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while ureq::get(&format!("{}/status", browser.base)).call().is_err() {
            if std::time::Instant::now() > deadline {
                return Err("chromedriver did not start".into());
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let caps = serde_json::json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1200,1400", format!("--user-data-dir={}", profile.display()),
            ]},
        }}});
        let v = browser.call("POST", "/session", Some(caps))?;
        browser.session = v["sessionId"].as_str().ok_or("no session id")?.to_string();
        Ok(browser)
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value> {
        let url = format!("{}{path}", self.base);
        let response = match method {
            "GET" => ureq::get(&url).call(),
            "DELETE" => ureq::delete(&url).call(),
            _ => ureq::post(&url).send_json(body.unwrap_or_else(|| serde_json::json!({}))),
        };
        let mut response = response.map_err(|e| format!("{method} {path}: {e}"))?;
        let v: Value = response
            .body_mut()
            .read_json()
            .map_err(|e| format!("{method} {path}: {e}"))?;
        Ok(v["value"].clone())
    }

    fn session(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value> {
        self.call(method, &format!("/session/{}{path}", self.session), body)
    }

    /// Navigates to `url`.
    pub fn open(&self, url: &str) -> Result {
        self.session("POST", "/url", Some(serde_json::json!({"url": url})))?;
        Ok(())
    }

    /// Clicks the first element matching a CSS selector, as a user would.
    pub fn click(&self, css: &str) -> Result {
        let e = self.session(
            "POST",
            "/element",
            Some(serde_json::json!({"using": "css selector", "value": css})),
        )?;
        let id = e
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .ok_or_else(|| format!("no element {css}: {e}"))?;
        self.session("POST", &format!("/element/{id}/click"), Some(serde_json::json!({})))?;
        Ok(())
    }

    /// Runs `js` in the page and returns what it returns.
    pub fn script(&self, js: &str) -> Result<Value> {
        self.session(
            "POST",
            "/execute/sync",
            Some(serde_json::json!({"script": js, "args": []})),
        )
    }

    /// Saves a PNG of the window to `path`.
    pub fn screenshot(&self, path: &Path) -> Result {
        use base64::Engine;
        let v = self.session("GET", "/screenshot", None)?;
        let png = base64::engine::general_purpose::STANDARD.decode(v.as_str().ok_or("no screenshot")?)?;
        std::fs::create_dir_all(path.parent().unwrap())?;
        std::fs::write(path, png)?;
        Ok(())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.session("DELETE", "", None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
