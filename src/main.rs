use clap::Parser;

/// mimalloc: the metrics allocate many small vectors; it is markedly faster than glibc malloc here.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    no_huge_pages();
    let cli = capscore::cli::Cli::parse();
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = capscore::cli::run(cli, &mut stdout) {
        eprintln!("{e}");
        std::process::exit(e.exit_code());
    }
}

/// Keeps transparent huge pages out of this process. mimalloc asks the kernel for huge pages on
/// its arenas; the kernel then zeroes 2 MiB at every first touch and splits the pages again
/// when mimalloc returns small parts of them. On a 500,000-image run that made the system time
/// 3 to 10 s (and the least of it when the machine was otherwise idle) against 1.8 s without
/// them, for the same user time (docs/performance.md, "Large sets").
fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: `prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)` takes integers only and changes nothing
    // but this process's huge-page policy; a kernel without it returns an error, ignored.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}
