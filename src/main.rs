use clap::Parser;

fn main() {
    let cli = capscore::cli::Cli::parse();
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = capscore::cli::run(cli, &mut stdout) {
        eprintln!("{e}");
        std::process::exit(e.exit_code());
    }
}
