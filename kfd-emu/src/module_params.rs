//! amdgpu's module parameters (`/sys/module/amdgpu/parameters/*`), as the emulated driver
//! shows them: the kernel's defaults for what the emulator models.

/// (name, contents) of each parameter file.
pub(crate) fn defaults() -> Vec<(&'static str, String)> {
    [
        // Compute wave save/restore: on (kfdtest's CWSR tests skip when it is 0 or absent).
        ("cwsr_enable", "1"),
        // KFD_SCHED_POLICY_HWS: the firmware scheduler maps queues.
        ("sched_policy", "0"),
        ("hws_max_conc_proc", "8"),
        ("max_num_of_queues_per_device", "4096"),
        ("queue_preemption_timeout_ms", "9000"),
        ("halt_if_hws_hang", "0"),
        ("hws_gws_support", "N"),
        ("debug_evictions", "N"),
        ("no_system_mem_limit", "N"),
        ("send_sigterm", "0"),
        ("ignore_crat", "0"),
        ("mes", "0"),
        // XNACK off (retry faults disabled): the emulated GPUs do not replay faults.
        ("noretry", "1"),
        ("gpu_recovery", "-1"),
        ("ras_enable", "-1"),
        ("vm_fragment_size", "-1"),
        ("vm_update_mode", "-1"),
        // amdgpu's "Emulation mode" switch, which AMD's pre-silicon emulation platforms load
        // the driver with (amdgpu.emu_mode=1) because they run GPU code orders of magnitude
        // slower than silicon. kfd-emu is such a platform, so it reports 1: test suites that
        // read it (kfdtest's `g_IsEmuMode`) shrink work sized for silicon.
        ("emu_mode", "1"),
    ]
    .into_iter()
    .map(|(k, v)| (k, format!("{v}\n")))
    .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_emulator_says_it_is_an_emulation_platform() {
        let p = super::defaults();
        let emu_mode = p
            .iter()
            .find(|(k, _)| *k == "emu_mode")
            .map(|(_, v)| v.as_str());
        assert_eq!(emu_mode, Some("1\n"));
    }
}
