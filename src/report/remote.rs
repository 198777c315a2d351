//! Target URLs off this machine, sent to by the user's opt-in
//! (`--allow-remote-targets`, `[target] allow_remote = true`): said in the
//! terminal and at the top of report.html, so nobody mistakes such a run
//! for one that stayed on loopback.

use crate::store::summary::ArmSummary;

/// One sentence, when the arm sent anywhere but this machine.
pub(crate) fn sentence(a: &ArmSummary) -> Option<String> {
    (!a.remote_targets.is_empty()).then(|| {
        format!(
            "sent to {} off this machine, as allowed by --allow-remote-targets or \
             [target] allow_remote: {}",
            if a.remote_targets.len() == 1 {
                "a target".to_string()
            } else {
                format!("{} targets", a.remote_targets.len())
            },
            a.remote_targets.join(", ")
        )
    })
}
