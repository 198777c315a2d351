//! `rlbench serve` started by a test: the reference API's replicas in a
//! mode and policy the test picks, their URLs once up, and the process
//! stopped (replicas and Redis with it) on every way out of the test.

use crate::common::{bin, write};
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};

/// A `rlbench serve` the test started: killed (and reaped) when dropped,
/// on every path out of the test, a failed assertion too; its replicas
/// die with it.
pub(crate) struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `rlbench serve` of `replicas` local replicas, each counting alone: 5 per
/// `window` of `algorithm`. Their URLs once all are up.
pub(crate) fn serve_replicas(
    dir: &std::path::Path,
    replicas: usize,
    algorithm: &str,
    window: &str,
) -> (Served, Vec<String>) {
    serve_mode(dir, replicas, "local", algorithm, window)
}

/// [`serve_replicas`] in `mode` (a Redis mode gets a Redis of its own,
/// which `serve` starts and stops).
pub(crate) fn serve_mode(
    dir: &std::path::Path,
    replicas: usize,
    mode: &str,
    algorithm: &str,
    window: &str,
) -> (Served, Vec<String>) {
    let scenario = write(
        dir,
        "serve.toml",
        &format!(
            r#"
name = "serve"
duration = "2s"
[policy]
algorithm = "{algorithm}"
limit = 5
window = "{window}"
[load]
rate = 100
[[arms]]
name = "served"
mode = "{mode}"
replicas = {replicas}
"#
        ),
    );
    let mut child = Served(
        Command::new(bin())
            .args(["serve", scenario.to_str().unwrap()])
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut stdout = BufReader::new(child.0.stdout.take().unwrap());
    let mut line = String::new();
    let mut urls = Vec::new();
    while urls.len() < replicas {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "serve ended early"
        );
        if let Some(at) = line.find("http://") {
            urls.push(line[at..].split_whitespace().next().unwrap().to_string());
        }
    }
    // Keep reading so serve never blocks on a full pipe.
    std::thread::spawn(move || {
        let _ = stdout.read_to_end(&mut Vec::new());
    });
    (child, urls)
}
