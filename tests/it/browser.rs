//! A real headless browser for the tests: Debian's Chromium driven through chromedriver's
//! W3C WebDriver protocol (JSON over HTTP on a loopback port), with a client of a few
//! commands written here rather than a crate of hundreds.
//!
//! The browser starts with a fresh profile and no network of its own (no background
//! requests, component updates, sync or QUIC), at 1280×800. Finding an element waits for
//! it (WebDriver's implicit wait, the tests' patience): no test sleeps.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use super::clients::{http_builder, runtime};
use super::util::{PATIENCE, eventually};

/// WebDriver's key for an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// The Chromium and chromedriver programs: `TMWS_CHROMIUM` and `TMWS_CHROMEDRIVER`, else
/// Debian's paths; None when either is missing.
pub fn programs() -> Option<(PathBuf, PathBuf)> {
    let pick = |var: &str, default: &str| std::env::var_os(var).map_or_else(|| PathBuf::from(default), PathBuf::from);
    let chromium = pick("TMWS_CHROMIUM", "/usr/bin/chromium");
    let driver = pick("TMWS_CHROMEDRIVER", "/usr/bin/chromedriver");
    (chromium.is_file() && driver.is_file()).then_some((chromium, driver))
}

/// A chromedriver process and one browser session; both end when dropped.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    rt: tokio::runtime::Runtime,
    http: reqwest::Client,
    _profile: tempfile::TempDir,
}

/// A port free now on 127.0.0.1.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Browser {
    /// Starts chromedriver on a loopback port and a headless Chromium session.
    pub fn start(chromium: &Path, driver: &Path) -> Browser {
        let port = free_port();
        let child = Command::new(driver)
            .args([format!("--port={port}"), "--allowed-ips=127.0.0.1".into(), "--log-level=OFF".into()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", driver.display()));
        let base = format!("http://127.0.0.1:{port}");
        let (rt, http) = (runtime(), http_builder().no_proxy().build().unwrap());
        let profile = tempfile::tempdir().unwrap();
        let mut browser = Browser { driver: child, base, session: String::new(), rt, http, _profile: profile };
        eventually("chromedriver ready on its port", || {
            let status =
                browser.rt.block_on(async { browser.http.get(format!("{}/status", browser.base)).send().await });
            match status {
                Ok(r) if r.status().is_success() => Ok(()),
                Ok(r) => Err(r.status().to_string()),
                Err(e) => Err(e.to_string()),
            }
        });
        let args = [
            "--headless".to_owned(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--disable-dev-shm-usage".into(),
            "--no-proxy-server".into(),
            "--window-size=1280,800".into(),
            format!("--user-data-dir={}", browser._profile.path().display()),
        ];
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
            "timeouts": {"implicit": PATIENCE.as_millis() as u64, "pageLoad": PATIENCE.as_millis() as u64},
        }}});
        let made = browser.call("POST", "/session", Some(caps));
        browser.session = made["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {made}")).to_owned();
        // The window holds more than the page: grow it until the page itself is 1280×800.
        let chrome = browser
            .run("return [window.outerWidth - window.innerWidth, window.outerHeight - window.innerHeight];", json!([]));
        let (w, h) = (chrome[0].as_u64().unwrap_or(0), chrome[1].as_u64().unwrap_or(0));
        browser.call("POST", &browser.at("/window/rect"), Some(json!({"width": 1280 + w, "height": 800 + h})));
        browser
    }

    /// A WebDriver command; its `value`, or a panic naming the command and the error.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}{path}", self.base);
        let request = match method {
            "GET" => self.http.get(url),
            "DELETE" => self.http.delete(url),
            _ => self.http.post(url).json(&body.unwrap_or_else(|| json!({}))),
        };
        let (status, v): (u16, Value) = self.rt.block_on(async {
            let r = request.send().await.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
            let status = r.status().as_u16();
            (status, r.json().await.unwrap_or(Value::Null))
        });
        assert!(status < 400, "{method} {path}: {status} {v}");
        v.get("value").cloned().unwrap_or(Value::Null)
    }

    fn at(&self, path: &str) -> String {
        format!("/session/{}{path}", self.session)
    }

    /// Opens `url` and waits for its load.
    pub fn go(&self, url: &str) {
        self.call("POST", &self.at("/url"), Some(json!({"url": url})));
    }

    pub fn url(&self) -> String {
        self.call("GET", &self.at("/url"), None).as_str().unwrap_or_default().to_owned()
    }

    /// The page's HTML as the browser holds it now.
    pub fn source(&self) -> String {
        self.call("GET", &self.at("/source"), None).as_str().unwrap_or_default().to_owned()
    }

    /// The first element `css` selects, waiting until there is one.
    pub fn find(&self, css: &str) -> String {
        let v = self.call("POST", &self.at("/element"), Some(json!({"using": "css selector", "value": css})));
        v[ELEMENT].as_str().unwrap_or_else(|| panic!("no element {css}: {v}")).to_owned()
    }

    /// How many elements `css` selects now (no wait).
    pub fn count(&self, css: &str) -> usize {
        let script = "return document.querySelectorAll(arguments[0]).length;";
        self.run(script, json!([css])).as_u64().unwrap_or(0) as usize
    }

    pub fn text_of(&self, css: &str) -> String {
        let e = self.find(css);
        self.call("GET", &self.at(&format!("/element/{e}/text")), None).as_str().unwrap_or_default().to_owned()
    }

    /// Types `text` into the field `css` selects, after clearing it.
    pub fn type_into(&self, css: &str, text: &str) {
        let e = self.find(css);
        self.call("POST", &self.at(&format!("/element/{e}/clear")), None);
        self.call("POST", &self.at(&format!("/element/{e}/value")), Some(json!({"text": text})));
    }

    /// Clicks what `css` selects; a click that submits a form waits for the next page.
    pub fn click(&self, css: &str) {
        let e = self.find(css);
        self.call("POST", &self.at(&format!("/element/{e}/click")), None);
    }

    /// Runs `script` in the page with `args`; its return value.
    pub fn run(&self, script: &str, args: Value) -> Value {
        self.call("POST", &self.at("/execute/sync"), Some(json!({"script": script, "args": args})))
    }

    /// The browser's cookies as it would send them to the page's origin.
    pub fn cookies(&self) -> Value {
        self.call("GET", &self.at("/cookie"), None)
    }

    pub fn delete_cookies(&self) {
        self.call("DELETE", &self.at("/cookie"), None);
    }

    /// Saves a screenshot of the viewport (1280×800) as `path` (PNG).
    pub fn screenshot(&self, path: &Path) {
        use base64::Engine as _;
        let v = self.call("GET", &self.at("/screenshot"), None);
        let png = base64::engine::general_purpose::STANDARD.decode(v.as_str().unwrap_or_default()).unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let url = format!("{}/session/{}", self.base, self.session);
            let _ = self.rt.block_on(async { self.http.delete(url).send().await });
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
