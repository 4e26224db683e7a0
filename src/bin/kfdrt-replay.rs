//! `kfdrt-replay DIR`: runs a capture (`KFDRT_CAPTURE=DIR`) again on the device
//! `KFDRT_DEVICE` selects (kfd-emu when there is no GPU) and compares every buffer the
//! dispatches wrote with the captured results. Exits 0 when all are byte-identical, 1 when a
//! dispatch differs (naming the first), 2 when the capture cannot be replayed.

use std::process::ExitCode;

fn main() -> ExitCode {
    let filter = std::env::var("KFDRT_LOG").unwrap_or_else(|_| "warn".into());
    env_logger::Builder::new().parse_filters(&filter).init();
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: kfdrt-replay CAPTURE_DIR");
        return ExitCode::from(2);
    };
    // The replay itself is not captured again, whatever the environment says.
    let options = match kfdrt::DebugOptions::from_env() {
        Ok(mut o) => {
            o.capture = None;
            o
        }
        Err(e) => {
            eprintln!("kfdrt-replay: {e}");
            return ExitCode::from(2);
        }
    };
    let kfd = match kfdrt::Kfd::builder().debug(options).open() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("kfdrt-replay: {e}");
            return ExitCode::from(2);
        }
    };
    println!(
        "replaying {} on {}",
        std::path::Path::new(&dir).display(),
        kfd.describe()
    );
    match kfdrt::debug::replay::replay(&kfd, std::path::Path::new(&dir)) {
        Ok(report) => {
            println!("{report}");
            if report.identical() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("kfdrt-replay: {e}");
            ExitCode::from(2)
        }
    }
}
