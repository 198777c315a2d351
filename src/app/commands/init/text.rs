//! The starter scenarios' text: the reference API's arms, a limiter of
//! the user's own (declared, or a template to declare), and one the probe
//! looked at.

/// The policy a template shows, commented out (and the reference API's
/// starter declares).
pub(super) const DEFAULT_POLICY: &str =
    "algorithm = \"sliding_log\"\nlimit = 10\nwindow = \"2s\"\n";

/// What `rlbench probe` found of a limiter, for its starter scenario.
#[derive(Debug)]
pub(crate) struct Found {
    /// Every URL the probe sent to, in its order.
    pub urls: Vec<String>,
    /// The `[policy]` lines, commented.
    pub policy: String,
    /// Where the key goes (`None`: every caller shares one bucket).
    pub key: Option<crate::app::commands::probe::keys::KeyLine>,
    pub limited: Vec<u16>,
    /// Requests per second over all keys, and the keys.
    pub rate: u64,
    pub keys: u32,
    pub duration_s: u64,
    /// What the rate is, for its comment.
    pub rate_note: &'static str,
    /// What the load can and cannot catch, as comment lines.
    pub catches: String,
    /// Each request on a connection of its own (`keep_alive = false`).
    pub fresh_connections: bool,
    /// The bursts arm's requests at each window edge (0: no such arm),
    /// and the span each edge's are sent within.
    pub burst: u64,
    pub burst_spread: String,
    /// What the bursts arm catches, as comment lines.
    pub bursts_comment: String,
    /// The many-keys arm (`None`: no such arm).
    pub many: Option<ManyKeysArm>,
    pub method: String,
    /// The headers the probe was given (`-H`), sent on every request.
    pub headers: Vec<(String, String)>,
    /// `[target]`'s lines for the HTTP version and TLS the probe spoke.
    pub connection: String,
}

/// The probed starter's third arm: many keys at once, at a rate of its
/// own.
#[derive(Debug)]
pub(crate) struct ManyKeysArm {
    pub rate: u64,
    pub keys: u32,
    /// The first key's requests in a row, each turn of the sweep.
    pub block: u32,
    /// What it catches, as comment lines.
    pub comment: String,
}

/// The starter for the reference API: its three demonstration arms.
pub(super) fn reference(name: &str, policy: &str) -> String {
    format!(
        r#"# {name}: a starter scenario. `rlbench check {name}.toml` validates it,
# `rlbench run {name}.toml` runs every arm and writes the report
# (reports/{name}/latest/report.html). docs/scenarios.md lists every key.
name = "{name}"
duration = "10s"             # each arm's load, after its replicas are up
seed = 1                     # which customer each request is for

[policy]                     # what the limiter promises, per customer
{policy}
[cluster]
replicas = 3                 # replica processes per arm (arms may override)

[load]
rate = 200                   # requests per second, open loop, over all customers
keys = 10                    # customers
timeout = "2s"

# One replica with the limiter in memory: correct.
[[arms]]
name = "single"
mode = "local"
replicas = 1
[arms.expect]
max_definite_violations = 0  # the gate that never flakes

# Three replicas, each counting alone: the fake global limit.
[[arms]]
name = "local"
mode = "local"
[arms.expect]
min_definite_violations = 1  # this arm is here to show the breakage

# Three replicas sharing Redis through one atomic Lua script: exact again.
# Needs redis-server on PATH (rlbench starts its own) or a [redis] url.
[[arms]]
name = "shared"
mode = "redis_lua"
clock = "redis"              # every decision reads Redis' clock
[arms.expect]
max_definite_violations = 0
"#
    )
}

/// The starter for a limiter of the user's own: `policy` declared, or
/// (`None`) a template whose `[policy]` is commented out — never a guess
/// that could fail a correct limiter; `run` refuses it until declared.
pub(super) fn external(
    name: &str,
    url: &str,
    key_header: &str,
    policy: Option<&str>,
    limited: u16,
) -> String {
    let policy = match policy {
        Some(lines) => {
            format!("[policy]                     # what your limiter promises, per key\n{lines}")
        }
        None => format!(
            "# [policy]: what your limiter promises, per key. Declare it:\n\
             # `rlbench probe {url}` finds it, and\n\
             # `rlbench init {name} --target {url} --force` writes it here.\n\
             # `rlbench run` refuses this file until then. For example:\n\
             {}",
            std::iter::once("[policy]")
                .chain(DEFAULT_POLICY.lines())
                .map(|l| format!("# {l}\n"))
                .collect::<String>()
        ),
    };
    let tls = if url.starts_with("https://") {
        "# ca = \"ca.pem\"              # https://: the authority to trust (else the system's),\n\
         # insecure = true            # or no check of the server's certificate at all\n"
    } else {
        ""
    };
    format!(
        r#"# {name}: a starter scenario against your own limiter at {url}.
# `rlbench check {name}.toml` validates it, `rlbench run {name}.toml` sends
# the load (to this machine only) and judges every answer against [policy].
name = "{name}"
duration = "10s"

[target]
kind = "external"
# More URLs: requests fan out across them ([load] fanout, round robin).
urls = ["{url}"]
method = "GET"
key_header = "{key_header}" # the header your limiter keys on
limited_status = [{limited}]       # what your limiter answers when it limits
{tls}
{policy}
[load]
rate = 200                   # requests per second, open loop
keys = 5
timeout = "2s"

[[arms]]
name = "api"
[arms.expect]
max_definite_violations = 0  # never admit beyond the policy
max_false_reject_ratio = 0   # never refuse what the policy allows
max_over_admission_ratio = 1.0  # never more than any correct limiter could
"#
    )
}

/// The starter for a limiter `rlbench probe` looked at.
pub(super) fn probed(name: &str, url: &str, f: &Found) -> String {
    use crate::app::commands::probe::keys::KeyLine;
    let (target_key, load_key) = match &f.key {
        Some(KeyLine::Target(l)) => (format!("{l}\n"), String::new()),
        Some(KeyLine::Load(l)) => (String::new(), format!("{l}\n")),
        None => (
            String::new(),
            "# every caller shares one bucket (rlbench probe moved no limit by key)\n".into(),
        ),
    };
    let limited = f
        .limited
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let headers = if f.headers.is_empty() {
        String::new()
    } else {
        let pairs: Vec<String> = f
            .headers
            .iter()
            .map(|(k, v)| {
                // A JSON string is a TOML basic string (the same escapes).
                let quoted = |x: &String| serde_json::to_string(x).unwrap_or_default();
                format!("{} = {}", quoted(k), quoted(v))
            })
            .collect();
        format!("headers = {{ {} }}\n", pairs.join(", "))
    };
    format!(
        r#"# {name}: a starter scenario against your own limiter at {url},
# its key and policy found by `rlbench probe`. `rlbench run {name}.toml`
# sends the load (to this machine only) and judges every answer.
name = "{name}"
duration = "{duration}s"

[target]
kind = "external"
urls = [{urls}]
method = "{method}"
{headers}{connection}{keep_alive}{target_key}limited_status = [{limited}]       # what your limiter answers when it limits

[policy]
{policy}
{catches}[load]
rate = {rate}                   # requests per second, open loop, {rate_note}
keys = {keys}
timeout = "2s"
{fanout}{load_key}
[[arms]]
name = "api"
[arms.expect]
max_definite_violations = 0  # never admit beyond the policy
max_false_reject_ratio = 0   # never refuse what the policy allows
max_over_admission_ratio = 1.0  # never more than any correct limiter could
{bursts}{many}"#,
        bursts = bursts_arm(f.burst, &f.burst_spread, &f.bursts_comment),
        many = f
            .many
            .as_ref()
            .map_or(String::new(), |m| many_keys_arm(m, f.fresh_connections)),
        duration = f.duration_s,
        urls = f
            .urls
            .iter()
            .map(|u| serde_json::to_string(u).unwrap_or_default())
            .collect::<Vec<_>>()
            .join(", "),
        fanout = if f.urls.len() > 1 {
            "fanout = \"round_robin\"        # as the probe sent them: every URL in turn\n"
        } else {
            ""
        },
        policy = f.policy,
        rate = f.rate,
        keys = f.keys,
        rate_note = f.rate_note,
        catches = f.catches,
        keep_alive = if f.fresh_connections {
            "keep_alive = false           # a connection per request: one key's requests reach \
             every worker\n"
        } else {
            ""
        },
        method = f.method,
        connection = f.connection,
    )
}

/// The probed starter's second arm: each key's requests together at every
/// edge of the policy's window, where a race between one key's concurrent
/// requests (read the count, then write it) admits past the limit;
/// `comment` says what it was rehearsed to catch.
fn bursts_arm(burst: u64, spread: &str, comment: &str) -> String {
    if burst == 0 {
        return String::new();
    }
    format!(
        r#"
{comment}[[arms]]
name = "bursts"
schedule = "bursts"
burst = {burst}                  # requests at each window edge, over all keys
burst_spread = "{spread}"
[arms.expect]
max_definite_violations = 0
max_false_reject_ratio = 0
max_over_admission_ratio = 1.0
"#,
    )
}

/// The probed starter's third arm: many keys at once on connections it
/// keeps (too fast for one per request, and a cache forgets keys
/// whichever worker holds it).
fn many_keys_arm(m: &ManyKeysArm, fresh_connections: bool) -> String {
    format!(
        r#"
{comment}[[arms]]
name = "keys"
schedule = "constant"
rate = {rate}                  # requests per second, over this arm's keys
keys = {keys}
key_distribution = "sweep"   # the first key {block} times in a row, then each other once
sweep_block = {block}
{keep}[arms.expect]
max_definite_violations = 0
max_false_reject_ratio = 0
max_over_admission_ratio = 1.0
"#,
        comment = m.comment,
        rate = m.rate,
        keys = m.keys,
        block = m.block,
        keep = if fresh_connections {
            "keep_alive = true            # connections kept: too fast for one per request\n"
        } else {
            ""
        },
    )
}
