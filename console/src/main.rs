//! `berth`: the operator's terminal console (see the `berth_console` crate).

fn main() -> color_eyre::Result<()> {
    berth_console::cli::main()
}
