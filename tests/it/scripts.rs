//! The README's two commands on a machine without what they need: with
//! redis-server absent from PATH (and installing not allowed), command 1
//! stops before building or running anything, with the one-line fix — never
//! a partial run followed by exit 3. And both skip, in one line, what is there.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A PATH holding everything of `/usr/bin` and `/bin` (and cargo's folder)
/// but the programs named.
fn path_without(dir: &Path, hidden: &[&str]) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let cargo = Path::new(env!("CARGO")).parent().unwrap().to_path_buf();
    for folder in [Path::new("/usr/bin"), Path::new("/bin"), cargo.as_path()] {
        for entry in std::fs::read_dir(folder).into_iter().flatten().flatten() {
            let name = entry.file_name();
            if hidden.iter().any(|h| name == *h) || bin.join(&name).exists() {
                continue;
            }
            let _ = symlink(entry.path(), bin.join(&name));
        }
    }
    bin.display().to_string()
}

#[test]
fn quickstart_without_redis_server_stops_before_anything_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_without(dir.path(), &["redis-server"]);
    let out = Command::new("bash")
        .arg(Path::new(ROOT).join("scripts/quickstart.sh"))
        .env("PATH", &path)
        .env("RLBENCH_INSTALL", "no")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("redis-server not found on PATH: install redis-server"),
        "{stderr}"
    );
    assert!(
        stderr.contains("sudo apt-get install redis-server"),
        "{stderr}"
    );
    assert!(
        !stdout.contains("== building") && !stdout.contains("== rlbench run"),
        "{stdout}"
    );
}

#[test]
fn the_test_command_says_what_it_skipped() {
    // Only the set-up half: with nothing to install, every need is one
    // "skipped" line. (RLBENCH_INSTALL=no: a missing one stops it instead.)
    let dir = tempfile::tempdir().unwrap();
    let probe = dir.path().join("needs.sh");
    std::fs::write(
        &probe,
        format!(
            ". {}/scripts/lib/need.sh\nneed sh sh sh sh\nneed surely-not-here-rlbench x x x\nneed_done\n",
            ROOT
        ),
    )
    .unwrap();
    let out = Command::new("bash")
        .arg(&probe)
        .env("RLBENCH_INSTALL", "no")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.starts_with("skipped: sh is there"), "{stdout}");
    assert!(
        stderr.contains("surely-not-here-rlbench not found on PATH"),
        "{stderr}"
    );
    assert_eq!(out.status.code(), Some(3));
}
