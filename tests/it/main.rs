//! rlbench's integration tests, one binary (as ripgrep keeps them): every
//! module drives real processes — the rlbench binary, its replicas,
//! redis-server, nginx, a browser — and `common` holds what they share.
//! One binary links once, where twenty linked twenty times.

mod common;

mod attack;
mod audit;
mod batching;
mod cdp;
mod chunked_bucket;
mod cli;
mod cluster;
mod cluster_failover;
mod columns;
mod compare;
mod connections;
mod crash;
mod damaged;
mod deployment;
mod distributed;
mod distributed_adversary;
mod distributed_attacks;
mod distributed_coordinator;
mod distributed_failures;
mod distributed_flood;
mod distributed_kit;
mod distributed_replays;
mod distributed_secrets;
mod doctor;
mod envoy_rls;
mod explain;
mod external;
mod failover;
mod faults;
mod first_run;
mod governor;
mod headers;
mod hostile_folder;
mod house_plan;
mod html;
mod http2;
mod keys;
mod live;
mod metrics;
mod not_sent;
mod probe;
mod probe_faults;
mod real_limiters;
mod redis;
mod report_fixture;
mod report_page;
mod retries;
mod run;
mod run_redis;
mod scripts;
mod secrets;
mod served;
mod shards;
mod spoofing;
mod third_party;
mod tls;
mod ttl_refresh;
mod verify_reference;
