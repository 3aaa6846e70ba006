//! `berth`: the operator's terminal console (see the `berth_console` crate).

/// mimalloc, not glibc's malloc (issue 14): at a quarter of scale S the
/// console with every view visited held 154 MB under mimalloc against
/// 160–172 MB under glibc, and 138 MB against 160 MB after 2,000 pods of
/// churn (`berth-bench --runtimes 500 --replicas 10 --nodes 50`, one run
/// each). The agent uses jemalloc: there mimalloc held more (84 MB
/// against 54 MB after convergence), see agent/src/main.rs.
///
/// Transparent huge pages are off: mimalloc is built with `no_thp`
/// (Cargo.toml), so it does not ask for them, and `cli::main` turns them
/// off for the process (`cli::without_huge_pages`). With them, `perf record -g` of a new
/// console's first frame at scale S put 38 % of its CPU in the kernel
/// zeroing 2 MB pages (`do_huge_pmd_anonymous_page`), faulted in again
/// after each purge of a freed list page. Without them, on the same held
/// cluster (issue 32, 2026-12-05, alternating runs): `berth get handlers
/// -A` 0.56–0.65 s of system time against 1.13–1.21 s, user time the
/// same; the first Runtimes frame's RSS 40–45 MB against 55–64 MB.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> color_eyre::Result<()> {
    berth_console::cli::main()
}
