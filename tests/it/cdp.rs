//! A minimal Chrome DevTools Protocol client for tests: Debian's Chromium,
//! headless, driven over one page target's WebSocket (sync tungstenite).
//! It opens pages, evaluates JavaScript, collects console errors and the
//! URLs the page requested, and takes screenshots. Every wait is bounded;
//! the browser (its whole process group) dies with the `Browser`, on a
//! panic too.

use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tungstenite::{Message, WebSocket};

/// How long one protocol command may take to answer.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a page may take to load.
const LOAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long Chromium may take to start and open its debugging port.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Debian's Chromium (which .ci/run installs); panics with the fix when missing.
pub(crate) fn chromium() -> &'static str {
    for candidate in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if Path::new(candidate).exists() {
            return candidate;
        }
    }
    panic!("this test needs Chromium: apt-get install chromium (.ci/run installs it)");
}

/// Headless, and quiet on the network: no updates, no sync, no first-run pages.
pub(crate) const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
];

/// A headless Chromium and a connection to one of its pages.
pub(crate) struct Browser {
    child: Child,
    /// The profile (`profile/`) and Chromium's stderr (`stderr.log`).
    dir: tempfile::TempDir,
    ws: WebSocket<TcpStream>,
    next_id: u64,
    /// Replies that arrived while waiting for another command's.
    replies: HashMap<u64, Value>,
    load_events: u64,
    console_errors: Vec<String>,
    requests: Vec<String>,
}

impl Browser {
    /// Starts Chromium on about:blank and attaches to its page, with the
    /// Runtime, Page, Network and Log domains on.
    pub(crate) fn launch() -> Browser {
        let dir = tempfile::tempdir().expect("a folder for the browser profile");
        let profile = dir.path().join("profile");
        std::fs::create_dir_all(&profile).unwrap();
        let log = std::fs::File::create(dir.path().join("stderr.log")).unwrap();
        let mut cmd = Command::new(chromium());
        cmd.args(FLAGS)
            .args(["--remote-debugging-port=0", "--window-size=1280,1024"])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        // A group of its own: Drop ends the browser and every helper
        // process it started, and nothing else.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd.spawn().expect("chromium starts");
        let mut starting = Starting {
            child: Some(child),
            dir: dir.path().to_path_buf(),
        };
        let port = starting.port(&profile.join("DevToolsActivePort"));
        let ws_url = starting.page_target(port);
        let (host, path) = ws_url
            .strip_prefix("ws://")
            .and_then(|rest| rest.split_once('/'))
            .unwrap_or_else(|| starting.fail(&format!("a page target at {ws_url}")));
        let stream = TcpStream::connect(host).unwrap_or_else(|e| starting.fail(&e.to_string()));
        stream.set_read_timeout(Some(COMMAND_TIMEOUT)).unwrap();
        let (ws, _) = tungstenite::client::client(format!("ws://{host}/{path}"), stream)
            .unwrap_or_else(|e| starting.fail(&format!("the page's WebSocket: {e}")));
        let child = starting.child.take().unwrap();
        drop(starting);
        let mut browser = Browser {
            child,
            dir,
            ws,
            next_id: 0,
            replies: HashMap::new(),
            load_events: 0,
            console_errors: Vec::new(),
            requests: Vec::new(),
        };
        for domain in ["Runtime", "Page", "Network", "Log"] {
            browser.command(&format!("{domain}.enable"), json!({}));
        }
        browser
    }

    /// Navigates to `url` and waits for its load event.
    pub(crate) fn open(&mut self, url: &str) {
        let before = self.load_events;
        let reply = self.command("Page.navigate", json!({ "url": url }));
        if let Some(error) = reply.get("errorText").and_then(Value::as_str) {
            panic!("opening {url}: {error}");
        }
        let deadline = Instant::now() + LOAD_TIMEOUT;
        while self.load_events == before {
            assert!(
                Instant::now() < deadline,
                "{url} did not finish loading within {LOAD_TIMEOUT:?}"
            );
            self.pump(deadline);
        }
    }

    /// The value of `js` (a promise is awaited); panics on a JavaScript exception.
    pub(crate) fn eval(&mut self, js: &str) -> Value {
        self.try_eval(js).unwrap_or_else(|e| panic!("{js}: {e}"))
    }

    /// Evaluates `js` every 100 ms until its value is truthy, and returns
    /// it; exceptions on the way count as not yet. Panics after `timeout`.
    pub(crate) fn wait_for(&mut self, js: &str, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let last = self.try_eval(js);
            if let Ok(value) = &last {
                if truthy(value) {
                    return value.clone();
                }
            }
            assert!(
                Instant::now() < deadline,
                "waited {timeout:?} for {js}; last: {last:?}"
            );
            // Sleeping by reading: events keep being recorded meanwhile.
            self.pump(Instant::now() + Duration::from_millis(100));
        }
    }

    /// Console errors, uncaught exceptions and error log entries seen so far.
    pub(crate) fn console_errors(&self) -> Vec<String> {
        self.console_errors.clone()
    }

    /// The URL of every request the page made so far.
    pub(crate) fn requests(&self) -> Vec<String> {
        self.requests.clone()
    }

    /// Saves a PNG of the page's viewport to `path`.
    pub(crate) fn screenshot(&mut self, path: &Path) {
        use base64::Engine;
        let reply = self.command("Page.captureScreenshot", json!({ "format": "png" }));
        let data = reply["data"].as_str().expect("screenshot data");
        let png = base64::engine::general_purpose::STANDARD
            .decode(data)
            .expect("base64 screenshot");
        std::fs::write(path, png).expect("screenshot written");
    }

    fn try_eval(&mut self, js: &str) -> Result<Value, String> {
        let reply = self.try_command(
            "Runtime.evaluate",
            json!({ "expression": js, "returnByValue": true, "awaitPromise": true }),
        )?;
        if let Some(details) = reply.get("exceptionDetails") {
            return Err(exception_text(details));
        }
        Ok(reply["result"].get("value").cloned().unwrap_or(Value::Null))
    }

    /// Sends a command and waits for its result; panics on a protocol error.
    fn command(&mut self, method: &str, params: Value) -> Value {
        self.try_command(method, params)
            .unwrap_or_else(|e| panic!("{method}: {e}"))
    }

    fn try_command(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({ "id": id, "method": method, "params": params });
        self.ws
            .send(Message::text(message.to_string()))
            .map_err(|e| format!("sending: {e}"))?;
        let deadline = Instant::now() + COMMAND_TIMEOUT;
        loop {
            if let Some(mut reply) = self.replies.remove(&id) {
                if let Some(error) = reply.get("error") {
                    return Err(error.to_string());
                }
                return Ok(reply["result"].take());
            }
            if Instant::now() >= deadline {
                return Err(format!("no answer within {COMMAND_TIMEOUT:?}"));
            }
            self.pump(deadline);
        }
    }

    /// Reads one message (or none, by `deadline`) and records it: a reply
    /// is kept for its command, an event noted.
    fn pump(&mut self, deadline: Instant) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        self.ws.get_ref().set_read_timeout(Some(left)).unwrap();
        let text = match self.ws.read() {
            Ok(Message::Text(text)) => text,
            Ok(_) => return,
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return
            }
            Err(e) => panic!("the browser's connection: {e}; {}", self.stderr_tail()),
        };
        let Ok(message) = serde_json::from_str::<Value>(text.as_str()) else {
            return;
        };
        if let Some(id) = message.get("id").and_then(Value::as_u64) {
            self.replies.insert(id, message);
            return;
        }
        let params = &message["params"];
        match message["method"].as_str().unwrap_or_default() {
            "Page.loadEventFired" => self.load_events += 1,
            "Network.requestWillBeSent" => {
                if let Some(url) = params["request"]["url"].as_str() {
                    self.requests.push(url.to_string());
                }
            }
            "Runtime.consoleAPICalled" if params["type"] == "error" => {
                let args: Vec<String> = params["args"]
                    .as_array()
                    .map(|args| args.iter().map(remote_object_text).collect())
                    .unwrap_or_default();
                self.console_errors
                    .push(format!("console.error: {}", args.join(" ")));
            }
            "Runtime.exceptionThrown" => {
                let text = exception_text(&params["exceptionDetails"]);
                self.console_errors.push(format!("exception: {text}"));
            }
            "Log.entryAdded" if params["entry"]["level"] == "error" => {
                let entry = &params["entry"];
                self.console_errors.push(format!(
                    "log: {} {}",
                    entry["text"].as_str().unwrap_or_default(),
                    entry["url"].as_str().unwrap_or_default()
                ));
            }
            _ => {}
        }
    }

    fn stderr_tail(&self) -> String {
        stderr_tail(self.dir.path())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        end_group(&mut self.child);
    }
}

/// Chromium while `Browser::launch` finds its page: killed if launching panics.
struct Starting {
    child: Option<Child>,
    dir: PathBuf,
}

impl Starting {
    fn fail(&mut self, what: &str) -> ! {
        panic!("starting Chromium: {what}; {}", stderr_tail(&self.dir));
    }

    /// The debugging port, from the file Chromium writes once it listens.
    fn port(&mut self, file: &Path) -> u16 {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            // Two lines: the port, then the browser target's path.
            if let Some((port, _)) = text.split_once('\n') {
                if let Ok(port) = port.trim().parse() {
                    return port;
                }
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                self.fail(&format!("it exited ({status})"));
            }
            if Instant::now() > deadline {
                self.fail(&format!("no {} within {START_TIMEOUT:?}", file.display()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The WebSocket URL of the page Chromium opened.
    fn page_target(&mut self, port: u16) -> String {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let targets = http_get(port, "/json/list").unwrap_or_default();
            let page = serde_json::from_str::<Value>(&targets)
                .ok()
                .and_then(|list| {
                    list.as_array()?
                        .iter()
                        .find(|t| t["type"] == "page")?
                        .get("webSocketDebuggerUrl")?
                        .as_str()
                        .map(str::to_string)
                });
            if let Some(url) = page {
                return url;
            }
            if Instant::now() > deadline {
                self.fail(&format!("no page target on port {port}: {targets}"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Starting {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            end_group(&mut child);
        }
    }
}

/// Kills Chromium's process group (the browser and its helpers), then
/// reaps the browser. The group is killed first, while the browser's pid
/// (the group's id) cannot have been reused.
fn end_group(child: &mut Child) {
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
    let _ = child.kill();
    let _ = child.wait();
}

/// The body of a GET on 127.0.0.1:`port` (Chromium keeps the connection
/// open: the body ends at its Content-Length).
fn http_get(port: u16, path: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let text = String::from_utf8_lossy(&response);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head.lines().find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().ok())?
            });
            if length.is_some_and(|n| body.len() >= n) {
                return Ok(body.to_string());
            }
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            let text = String::from_utf8_lossy(&response);
            return Ok(text
                .split_once("\r\n\r\n")
                .map(|(_, b)| b.to_string())
                .unwrap_or_default());
        }
        response.extend_from_slice(&chunk[..n]);
    }
}

fn stderr_tail(dir: &Path) -> String {
    let log: PathBuf = dir.join("stderr.log");
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let tail: Vec<&str> = text.lines().rev().take(20).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    format!("Chromium's stderr:\n{}", tail.join("\n"))
}

/// JavaScript's truthiness of a value returned by value.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|n| n != 0.0 && !n.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

fn exception_text(details: &Value) -> String {
    details["exception"]["description"]
        .as_str()
        .or_else(|| details["text"].as_str())
        .unwrap_or("an exception")
        .to_string()
}

fn remote_object_text(object: &Value) -> String {
    match object.get("value") {
        Some(Value::String(s)) => s.clone(),
        Some(value) => value.to_string(),
        None => object["description"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    }
}

#[test]
fn cdp_opens_a_page_evaluates_and_collects_errors_and_requests() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.html");
    std::fs::write(
        &page,
        r#"<!doctype html><title>t</title><p id="x">hello</p>
<script>window.answer = 6 * 7; console.error("boom", 1);
setTimeout(() => { document.body.dataset.late = "yes"; }, 300);</script>"#,
    )
    .unwrap();
    let mut browser = Browser::launch();
    let url = format!("file://{}", page.display());
    browser.open(&url);
    assert_eq!(browser.eval("window.answer"), json!(42));
    assert_eq!(
        browser.eval("document.getElementById('x').textContent"),
        json!("hello")
    );
    assert_eq!(browser.eval("Promise.resolve(5)"), json!(5));
    assert_eq!(
        browser.wait_for("document.body.dataset.late", Duration::from_secs(5)),
        json!("yes")
    );
    let errors = browser.console_errors();
    assert!(errors.iter().any(|e| e.contains("boom 1")), "{errors:?}");
    let thrown =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| browser.eval("nope.nope")));
    assert!(thrown.is_err(), "an exception panics");
    browser.eval("setTimeout(() => { throw new Error('later') }, 0); 1");
    browser.wait_for(
        "new Promise(r => setTimeout(() => r(true), 50))",
        Duration::from_secs(5),
    );
    assert!(
        browser.console_errors().iter().any(|e| e.contains("later")),
        "{:?}",
        browser.console_errors()
    );
    let requests = browser.requests();
    assert!(requests.contains(&url), "{requests:?}");
    assert!(
        requests
            .iter()
            .all(|u| u.starts_with("file:") || u.starts_with("data:") || u.starts_with("about:")),
        "{requests:?}"
    );
    let shot = dir.path().join("shot.png");
    browser.screenshot(&shot);
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
}
