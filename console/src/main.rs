//! `berth`: the operator's terminal console (see the `berth_console` crate).

/// mimalloc, not glibc's malloc (issue 14): at a quarter of scale S the
/// console with every view visited held 154 MB under mimalloc against
/// 160–172 MB under glibc, and 138 MB against 160 MB after 2,000 pods of
/// churn (`berth-bench --runtimes 500 --replicas 10 --nodes 50`, one run
/// each). The agent uses jemalloc: there mimalloc held more (84 MB
/// against 54 MB after convergence), see agent/src/main.rs.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> color_eyre::Result<()> {
    berth_console::cli::main()
}
