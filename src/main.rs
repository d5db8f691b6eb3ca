use clap::Parser;

/// mimalloc: the metrics allocate many small vectors; it is markedly faster than glibc malloc here.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = capscore::cli::Cli::parse();
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = capscore::cli::run(cli, &mut stdout) {
        eprintln!("{e}");
        std::process::exit(e.exit_code());
    }
}
