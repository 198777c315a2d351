//! rlbench's entry point: the allocator, then the library's `main`
//! (app/entry.rs: parse the command line, carry the command out, write
//! what it said, exit with its code).

// The replicas allocate per request (hyper, axum, redis-rs): glibc's
// malloc took about 14% of a redis_lua replica's CPU in `perf`.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    rlbench::main()
}
