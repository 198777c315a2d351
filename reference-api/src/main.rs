//! Standalone reference API: `reference-api --config replica.json
//! [--listen 127.0.0.1:8080]`. rlbench itself starts replicas through its
//! own hidden `replica` subcommand, which calls the same library code.
#![allow(clippy::print_stdout)]

use reference_api::{replica, ReplicaConfig};
use std::net::SocketAddr;
use std::process::ExitCode;

const USAGE: &str =
    "usage: reference-api --config FILE.json [--listen ADDR] [--name REPLICA] [--exit-on-stdin-eof]";

fn parse() -> Result<(ReplicaConfig, SocketAddr, bool), String> {
    let mut config = None;
    let mut listen: SocketAddr = ([127, 0, 0, 1], 8080).into();
    let mut watch_stdin = false;
    let mut name = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--config" => {
                let path = args.next().ok_or("--config needs a file")?;
                let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
                config = Some(
                    serde_json::from_str::<ReplicaConfig>(&text)
                        .map_err(|e| format!("{path}: {e}"))?,
                );
            }
            "--listen" => {
                let addr = args.next().ok_or("--listen needs an address")?;
                listen = addr.parse().map_err(|_| {
                    format!("--listen: {addr:?} is not an address like 127.0.0.1:8080")
                })?;
            }
            "--name" => name = Some(args.next().ok_or("--name needs a replica name")?),
            "--exit-on-stdin-eof" => watch_stdin = true,
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let mut config: ReplicaConfig =
        config.ok_or_else(|| format!("--config is required\n{USAGE}"))?;
    if let Some(name) = name {
        config.replica = name;
    }
    Ok((config, listen, watch_stdin))
}

#[tokio::main]
async fn main() -> ExitCode {
    let (config, listen, watch_stdin) = match parse() {
        Ok(parsed) => parsed,
        Err(e) => {
            eprintln!("reference-api: {e}");
            return ExitCode::from(2);
        }
    };
    let announce = |addr: SocketAddr| println!("{}http://{addr}", replica::READY_PREFIX);
    match replica::run(
        config,
        listen,
        announce,
        replica::shutdown_signal(watch_stdin),
    )
    .await
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reference-api: {e}");
            ExitCode::from(3)
        }
    }
}
