//! `KFDRT_LOG` (issue 15 item 1): a device opened with a log filter installs a stderr logger
//! in a program that has none, at the level the filter asks for. In a process of its own: the
//! logger is process-wide.

use crate::common;

use kfdrt::emu::{EmuConfig, Preset};
use kfdrt::{DebugOptions, Error, Kfd};

#[test]
fn a_log_filter_installs_a_logger_and_a_bad_one_is_refused() {
    common::own_process::in_own_process(
        "log_filter::a_log_filter_installs_a_logger_and_a_bad_one_is_refused",
        || {
            assert_eq!(log::max_level(), log::LevelFilter::Off, "no logger before");
            let options = DebugOptions::default().with_log("error,kfdrt=debug");
            let kfd = common::Checked::new(
                Kfd::builder()
                    .emulated(EmuConfig::new(Preset::Gfx90a, 1))
                    .debug(options)
                    .open()
                    .unwrap(),
            );
            assert_eq!(log::max_level(), log::LevelFilter::Debug);
            drop(kfd);
            match Kfd::builder()
                .emulated(EmuConfig::new(Preset::Gfx90a, 1))
                .debug(DebugOptions::default().with_log("=,"))
                .open()
            {
                Err(Error::Environment { var, .. }) => assert_eq!(var, "KFDRT_LOG"),
                other => panic!("{other:?}"),
            }
        },
    );
}
