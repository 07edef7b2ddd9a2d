//! `cuzk`: the command-line front end (`cuzk_daemon::cli`).

fn main() -> std::process::ExitCode {
    cuzk_daemon::cli::main()
}
