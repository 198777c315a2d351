//! rlbench's entry point: the allocator, then the library's `main`
//! (app/entry.rs: parse the command line, carry the command out, write
//! what it said, exit with its code).

// The replicas allocate per request (hyper, axum, redis-rs): glibc's
// malloc took about 14% of a redis_lua replica's CPU in `perf`. Built
// without transparent huge pages (Cargo feature `no_thp`): with them its
// memory was backed 2 MB at a time, and reading back a 5-minute run's 6 M
// requests peaked about 40 MB higher (BENCHMARKS.md, "Peak RSS").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    rlbench::main()
}
