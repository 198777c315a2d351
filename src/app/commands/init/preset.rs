//! Limiters people run, for `init --preset`: each one's policy in its own
//! terms and what it answers when it limits.

/// Limiters people run, for `init --preset`: each one's policy in its own
/// terms (docs/own-limiter.md, "Burst conventions"), and what it answers
/// when it limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Preset {
    Nginx,
    Haproxy,
    ExpressRateLimit,
    Governor,
    RedisCell,
    Aspnetcore,
}

impl From<crate::cli::InitPreset> for Preset {
    fn from(p: crate::cli::InitPreset) -> Self {
        use crate::cli::InitPreset as P;
        match p {
            P::Nginx => Preset::Nginx,
            P::Haproxy => Preset::Haproxy,
            P::ExpressRateLimit => Preset::ExpressRateLimit,
            P::Governor => Preset::Governor,
            P::RedisCell => Preset::RedisCell,
            P::Aspnetcore => Preset::Aspnetcore,
        }
    }
}

impl Preset {
    /// Every preset, for the tests.
    #[cfg(test)]
    pub(crate) const ALL: [Preset; 6] = [
        Preset::Nginx,
        Preset::Haproxy,
        Preset::ExpressRateLimit,
        Preset::Governor,
        Preset::RedisCell,
        Preset::Aspnetcore,
    ];

    /// The `[policy]` lines, each number commented with where it comes from.
    pub(crate) fn policy(self) -> &'static str {
        match self {
            Preset::Nginx => {
                "preset = \"nginx_limit_req\"  # limit_req_zone … rate=10r/s; limit_req burst=5 nodelay
rate = \"10r/s\"               # the zone's rate= (r/s only)
burst = 5                    # limit_req's burst= (0 without one)
nodelay = true               # limit_req's nodelay (the same admits without it, answered late)
"
            }
            Preset::Haproxy => {
                "algorithm = \"sliding_counter\" # stick-table … store http_req_rate(1s)
limit = 10                   # deny if { sc_http_req_rate(0) gt 10 }
window = \"1s\"                # http_req_rate's period
count_rejected = true        # the rate counts denied requests too
"
            }
            Preset::ExpressRateLimit => {
                "algorithm = \"fixed_window\"  # express-rate-limit's memory store: a window from the first hit
limit = 10                   # limit (max)
window = \"1m\"                # windowMs
"
            }
            Preset::Governor => {
                "preset = \"governor\"         # Quota::per_second(10).allow_burst(10)
rate = \"10/1s\"               # the quota's rate
burst = 10                   # allow_burst (default: the rate's count)
"
            }
            Preset::RedisCell => {
                "preset = \"redis_cell\"       # CL.THROTTLE key 5 10 1
rate = \"10/1s\"               # count per period
burst = 5                    # max_burst
"
            }
            Preset::Aspnetcore => {
                "preset = \"aspnetcore\"       # RateLimitPartition.GetFixedWindowLimiter, QueueLimit 0
limiter = \"fixed_window\"     # or sliding_window, token_bucket
permit_limit = 10            # PermitLimit
window = \"1s\"                # Window
"
            }
        }
    }

    /// The status it limits with by default.
    pub(crate) fn limited_status(self) -> u16 {
        match self {
            // nginx answers 503 unless limit_req_status says otherwise.
            Preset::Nginx => 503,
            // ASP.NET Core's RejectionStatusCode defaults to 503.
            Preset::Aspnetcore => 503,
            _ => 429,
        }
    }
}
