//! The C allocator's settings for a long-running server (issue 48: peak memory).
//!
//! glibc's defaults suit short programs: up to 8 arenas per core, each keeping what its
//! threads freed, and a threshold for returning memory to the system that rises with the
//! largest block ever freed. A server that parses a 1 MB push now and then (a 5,000-finding
//! scan) kept about 15 MB of such freed memory for good (docs/benchmarks.md, "Memory by
//! step"). These settings keep two arenas (the runtime has two busy threads per core at most),
//! put blocks of 128 KiB and more in mappings of their own, returned when freed, and hand back
//! the heap's free top over 128 KiB.
//!
//! glibc reads them once, as the process starts, from `GLIBC_TUNABLES`; no safe call sets
//! them later (the workspace forbids `unsafe`). So `serve` executes itself again, once, with
//! them set: the same process id, arguments and environment otherwise. An operator's own
//! `GLIBC_TUNABLES` is left as it is, and a system without glibc never gets here.

/// What `serve` runs with unless the operator set `GLIBC_TUNABLES`.
pub const TUNABLES: &str =
    "glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=131072:glibc.malloc.trim_threshold=131072";

/// Executes this program again with [`TUNABLES`], before any thread starts. Returns only when
/// it did not: tunables already set (by the operator, or by the first execution), or the
/// program could not be executed again (it then runs on glibc's defaults, and says so).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn apply_tunables() {
    use std::os::unix::process::CommandExt as _;
    if std::env::var_os("GLIBC_TUNABLES").is_some() {
        return;
    }
    // The running file itself, even if an upgrade has replaced its path since.
    let exe = std::path::Path::new("/proc/self/exe");
    let mut args = std::env::args_os();
    let mut again = std::process::Command::new(exe);
    if let Some(name) = args.next() {
        again.arg0(name);
    }
    let err = again.args(args).env("GLIBC_TUNABLES", TUNABLES).exec();
    eprintln!("note: serving with glibc's default allocator settings ({err}); see GLIBC_TUNABLES in docs/configuration.md");
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn apply_tunables() {}

/// The allocator settings this process runs with, for the start-up log. (What
/// `/proc/<pid>/environ` shows is not it: glibc cuts that copy short as it reads it.)
pub fn in_use() -> String {
    match std::env::var("GLIBC_TUNABLES") {
        Ok(tunables) => format!("GLIBC_TUNABLES={tunables}"),
        Err(_) => "the C library's defaults".to_owned(),
    }
}
