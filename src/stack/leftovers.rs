//! Temporary folders rlbench makes (a Redis server's, `attack`'s scratch
//! run folder) are named `rlbench-<pid>-…` after the process that made
//! them. Each is removed on every exit path rlbench sees; one a kill left
//! behind (its process gone) is removed by the next rlbench that starts
//! ([`sweep`]).

use std::path::Path;

/// The start of every temporary folder this process makes.
pub(crate) fn prefix() -> String {
    format!("rlbench-{}-", std::process::id())
}

/// The process that made the temporary folder `name`, if rlbench did.
fn maker(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("rlbench-")?;
    let (pid, _) = rest.split_once('-')?;
    pid.parse().ok()
}

/// Removes the temporary folders in `dir` whose makers are gone; how many.
pub(crate) fn sweep_in(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            maker(&name).is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists())
                && e.file_type().is_ok_and(|t| t.is_dir())
        })
        .filter(|e| std::fs::remove_dir_all(e.path()).is_ok())
        .count()
}

/// [`sweep_in`] the system's temporary folder.
pub(crate) fn sweep() -> usize {
    sweep_in(&std::env::temp_dir())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_folders_of_gone_rlbench_processes_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        // Process ids stay below 2^22 on Linux: 4000000000 is nobody's.
        let gone = dir.path().join("rlbench-4000000000-redis-abc");
        let mine = dir.path().join(format!("{}redis-def", prefix()));
        let other = dir.path().join("rlbench-serve-notapid");
        let file = dir.path().join("rlbench-4000000001-a-file");
        for d in [&gone, &mine, &other] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("redis.log"), "x").unwrap();
        }
        std::fs::write(&file, "x").unwrap();
        assert_eq!(sweep_in(dir.path()), 1);
        assert!(!gone.exists());
        assert!(mine.exists() && other.exists() && file.exists());
        assert_eq!(maker("rlbench-12-attack-x"), Some(12));
        assert_eq!(maker("other-12-x"), None);
    }
}
