//! Failures are typed errors naming the PC (and words, text, address), never panics or hangs:
//! undecodable and unimplemented instructions, page faults on data and on instruction fetch,
//! registers outside the allocation, traps, scratch without backing, invalid dispatches,
//! runaway loops stopped by the budget and by cancellation. Also the code cache's icache
//! behaviour: stale until invalidated.

use crate::common;

use common::gpu::*;
use kfd_emu_isa::{
    run_workgroup, AccessKind, KernelDescriptor, Memory, MessageSink, RunControl, SqMessage,
    Target, TrapHandler, TrapRouting, WaveError,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

const ENTRY: u64 = 256;

// Hand-assembled words (llvm-mc-16 -mcpu=gfx90a -show-encoding).
const S_LOAD_OUT: [u32; 2] = [0xC006_0080, 0]; // s_load_dwordx2 s[2:3], s[0:1], 0x0
const S_WAITCNT_LGKM: u32 = 0xBF8C_C07F; // s_waitcnt lgkmcnt(0)
const V_MOV_V1_0: u32 = 0x7E02_0280; // v_mov_b32 v1, 0
const V_MOV_V2_7: u32 = 0x7E04_0287; // v_mov_b32 v2, 7
const V_MOV_V2_9: u32 = 0x7E04_0289; // v_mov_b32 v2, 9
const GLOBAL_STORE: [u32; 2] = [0xDC70_8000, 0x0002_0201]; // global_store_dword v1, v2, s[2:3]
const S_ENDPGM: u32 = 0xBF81_0000;
const S_BRANCH_SELF: u32 = 0xBF82_FFFF; // s_branch -1
const S_TRAP_2: u32 = 0xBF92_0002;

/// A kernel of `code` words: kernarg pointer in s[0:1], work-group id x in s2, 8 VGPRs.
fn tiny(t: Target, code: &[u32]) -> (Gpu, u64) {
    let mut gpu = Gpu::new(t);
    let ko = gpu.alloc(4096);
    let desc = KernelDescriptor {
        kernarg_size: 8,
        kernel_code_entry_byte_offset: ENTRY as i64,
        compute_pgm_rsrc1: 0,
        compute_pgm_rsrc2: 2 << 1 | 1 << 7,
        kernel_code_properties: 1 << 3,
        ..KernelDescriptor::default()
    };
    gpu.mem.write(ko, &desc.to_bytes()).unwrap();
    let bytes: Vec<u8> = code.iter().flat_map(|w| w.to_le_bytes()).collect();
    gpu.mem.write(ko + ENTRY, &bytes).unwrap();
    (gpu, ko)
}

fn one_wave(out: u64) -> Launch {
    let mut l = Launch::linear(64, 64, Args::new().ptr(out).done());
    l.scratch = None;
    l
}

#[test]
fn undecodable_words_name_pc_and_words() {
    for t in Target::GFX9 {
        let (mut gpu, ko) = tiny(t, &[V_MOV_V1_0, 0xFFFF_FFFF, S_ENDPGM]);
        let e = gpu.run(ko, &one_wave(0)).unwrap_err();
        assert_eq!(
            e,
            WaveError::Undecodable {
                pc: ko + ENTRY + 4,
                words: vec![0xFFFF_FFFF]
            },
            "{t}"
        );
        assert!(e.to_string().contains("ffffffff"), "{e}");
    }
}

#[test]
fn unimplemented_instruction_names_pc_words_and_text() {
    // A graphics-only instruction the interpreter decodes but does not run.
    let cube = [0xD1C4_0003, 0x0406_0501];
    for (t, text) in [
        (Target::Gfx90a, "v_cubeid_f32 v3, v1, v2, v1"),
        (Target::Gfx942, "v_cubeid_f32 v3, v1, v2, v1"),
    ] {
        let (mut gpu, ko) = tiny(t, &[V_MOV_V1_0, cube[0], cube[1], S_ENDPGM]);
        match gpu.run(ko, &one_wave(0)).unwrap_err() {
            WaveError::Unimplemented {
                pc,
                words,
                text: got,
            } => {
                assert_eq!(pc, ko + ENTRY + 4, "{t}");
                assert_eq!(words, cube.to_vec(), "{t}");
                assert_eq!(got, text, "{t}");
            }
            e => panic!("{t}: {e}"),
        }
    }
}

#[test]
fn stores_and_loads_outside_memory_fault_with_the_address() {
    for t in Target::GFX9 {
        let (mut gpu, base, co) = kernels(t);
        let k = base + co.symbol("vector_add.kd");
        let a = gpu.alloc(4096);
        let hole = 0xDEAD_0000_0000u64;
        let args = Args::new().ptr(a).ptr(a).ptr(hole).i32(64).done();
        match gpu.run(k, &Launch::linear(64, 64, args)).unwrap_err() {
            WaveError::MemoryFault { va, kind, pc } => {
                assert_eq!((va, kind), (hole, AccessKind::Write), "{t}");
                assert!(
                    pc > base && pc < base + 0x10000,
                    "{t}: pc {pc:#x} in the kernel"
                );
            }
            e => panic!("{t}: {e}"),
        }
        // A read past the end of a mapping: the first lane beyond it faults.
        let args = Args::new().ptr(a + 4096 - 32).ptr(a).ptr(a).i32(64).done();
        match gpu.run(k, &Launch::linear(64, 64, args)).unwrap_err() {
            WaveError::MemoryFault { va, kind, .. } => {
                assert_eq!((va, kind), (a + 4096, AccessKind::Read), "{t}");
            }
            e => panic!("{t}: {e}"),
        }
    }
}

#[test]
fn instruction_fetch_faults_and_wild_jumps() {
    for t in Target::GFX9 {
        // s_mov_b32 s0, 0x1000; s_mov_b32 s1, 0; s_setpc_b64 s[0:1]
        let code = [0xBE80_00FF, 0x1000, 0xBE81_0080, 0xBE80_1D00];
        let (mut gpu, ko) = tiny(t, &code);
        let e = gpu.run(ko, &one_wave(0)).unwrap_err();
        assert_eq!(
            e,
            WaveError::MemoryFault {
                va: 0x1000,
                kind: AccessKind::Execute,
                pc: 0x1000
            },
            "{t}"
        );
        // Falling off the end of mapped code.
        let (mut gpu, ko) = tiny(t, &[V_MOV_V1_0]);
        gpu.mem.write(ko + ENTRY + 4, &[0xFF; 4096 - 260]).unwrap();
        let e = gpu.run(ko, &one_wave(0)).unwrap_err();
        assert!(
            matches!(
                e,
                WaveError::Undecodable { .. } | WaveError::MemoryFault { .. }
            ),
            "{t}: {e}"
        );
    }
}

#[test]
fn registers_outside_the_allocation_are_illegal() {
    for t in Target::GFX9 {
        let (mut gpu, ko) = tiny(t, &[0x7F90_0280, S_ENDPGM]); // v_mov_b32 v200, 0
        match gpu.run(ko, &one_wave(0)).unwrap_err() {
            WaveError::IllegalOperand { pc, text, .. } => {
                assert_eq!(pc, ko + ENTRY, "{t}");
                assert_eq!(text, "v_mov_b32_e32 v200, 0", "{t}");
            }
            e => panic!("{t}: {e}"),
        }
    }
}

#[test]
fn s_trap_stops_the_wave() {
    for t in Target::GFX9 {
        let (mut gpu, ko) = tiny(t, &[S_TRAP_2, S_ENDPGM]);
        assert_eq!(
            gpu.run(ko, &one_wave(0)).unwrap_err(),
            WaveError::Trap {
                pc: ko + ENTRY,
                id: 2
            },
            "{t}"
        );
    }
}

/// Runs one wave of `ko` with `trap` routing; returns the result and the messages it sent.
fn run_trapping(
    gpu: &mut Gpu,
    ko: u64,
    out: u64,
    trap: TrapRouting,
) -> (Result<(), WaveError>, Vec<SqMessage>) {
    let mut setup = gpu.setup(ko, &one_wave(out));
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    setup.trap = trap;
    setup.messages = Some(MessageSink(Arc::new(move |m| sink.lock().unwrap().push(m))));
    let r = run_workgroup(&setup, [0, 0, 0], &gpu.mem, &RunControl::default()).map(|_| ());
    let msgs = got.lock().unwrap().clone();
    (r, msgs)
}

#[test]
fn traps_go_to_the_second_level_handler_or_as_the_first_level_handler_leaves_them() {
    // The kernel traps (s_trap 2), then stores 7: it gets there only if the trap returns.
    let kernel = [
        S_LOAD_OUT[0],
        S_LOAD_OUT[1],
        S_WAITCNT_LGKM,
        S_TRAP_2,
        V_MOV_V1_0,
        V_MOV_V2_7,
        GLOBAL_STORE[0],
        GLOBAL_STORE[1],
        S_ENDPGM,
    ];
    // A handler that steps past the s_trap, reports M0 = 0x1234 plus its doorbell id, and
    // returns (llvm-mc-16 -mcpu=gfx90a).
    let returning = [
        0x806C_846C, // s_add_u32 ttmp0, ttmp0, 4
        0x826D_806D, // s_addc_u32 ttmp1, ttmp1, 0
        0x866D_FF6D, // s_and_b32 ttmp1, ttmp1, 0xffff
        0x0000_FFFF,
        0xBEFE_00FF, // s_mov_b32 exec_lo, 0x80000000
        0x8000_0000,
        0xBF90_000A, // s_sendmsg sendmsg(MSG_GET_DOORBELL)
        0x876F_FF7E, // s_or_b32 ttmp3, exec_lo, 0x1234 << 10
        0x0048_D000,
        0xBEFC_006F, // s_mov_b32 m0, ttmp3
        0xBF90_0001, // s_sendmsg sendmsg(MSG_INTERRUPT)
        0xBE80_1F6C, // s_rfe_b64 ttmp[0:1]
    ];
    for t in Target::GFX9 {
        let (mut gpu, ko) = tiny(t, &kernel);
        let out = gpu.alloc(4);
        let tba = gpu.upload(&u32_bytes(&returning));
        let h = TrapHandler {
            tba,
            tma: 0,
            doorbell_id: 5,
        };
        let (r, msgs) = run_trapping(&mut gpu, ko, out, TrapRouting::Handler(h));
        r.unwrap();
        assert_eq!(gpu.mem.read_u32(out).unwrap(), 7, "{t}: the wave came back");
        assert_eq!(
            msgs,
            [SqMessage {
                m0: 0x1234 << 10 | 5,
                privileged: true
            }],
            "{t}"
        );
        // Without a second-level handler the s_trap is stepped over.
        gpu.mem.write_u32(out, 0).unwrap();
        let (r, msgs) = run_trapping(&mut gpu, ko, out, TrapRouting::FirstLevelOnly);
        r.unwrap();
        assert_eq!(gpu.mem.read_u32(out).unwrap(), 7, "{t}");
        assert!(msgs.is_empty());
        // Reported as it is by default.
        let (r, _) = run_trapping(&mut gpu, ko, out, TrapRouting::Report);
        assert!(
            matches!(r, Err(WaveError::Trap { id: 2, .. })),
            "{t}: {r:?}"
        );
    }
}

#[test]
fn an_illegal_instruction_halts_the_wave_after_the_handler_reports_it() {
    let kernel = [0xFFFF_FFFF, S_ENDPGM];
    // Reports TRAPSTS in M0 and parks the wave.
    let parking = [
        0xB8EE_F803, // s_getreg_b32 ttmp2, hwreg(HW_REG_TRAPSTS)
        0xBEFC_006E, // s_mov_b32 m0, ttmp2
        0xBF90_0001, // s_sendmsg sendmsg(MSG_INTERRUPT)
        0xBF8D_0001, // s_sethalt 1
        S_ENDPGM,
    ];
    for t in Target::GFX9 {
        let (mut gpu, ko) = tiny(t, &kernel);
        let tba = gpu.upload(&u32_bytes(&parking));
        let h = TrapHandler {
            tba,
            tma: 0,
            doorbell_id: 0,
        };
        let (r, msgs) = run_trapping(&mut gpu, ko, 0, TrapRouting::Handler(h));
        assert_eq!(
            r,
            Err(WaveError::Halted {
                pc: tba + 12,
                trapsts: 1 << 11
            }),
            "{t}"
        );
        assert_eq!(msgs.len(), 1, "{t}");
        assert_eq!(msgs[0].m0 & 1 << 11, 1 << 11, "{t}: TRAPSTS.ILLEGAL_INST");
        // Without a handler the first-level one halts the wave where it is, silently.
        let (r, msgs) = run_trapping(&mut gpu, ko, 0, TrapRouting::FirstLevelOnly);
        assert_eq!(
            r,
            Err(WaveError::Halted {
                pc: ko + ENTRY,
                trapsts: 1 << 11
            }),
            "{t}"
        );
        assert!(msgs.is_empty());
    }
}

#[test]
fn work_groups_read_the_xcc_they_run_on() {
    // out[group] = HW_REG_XCC_ID's XCC_ID (llvm-mc-16 -mcpu=gfx940).
    let code = [
        0xC006_0100, // s_load_dwordx2 s[4:5], s[0:1], 0x0
        0x0000_0000,
        S_WAITCNT_LGKM,
        0xB883_1814, // s_getreg_b32 s3, hwreg(HW_REG_XCC_ID, 0, 4)
        0x7E04_0203, // v_mov_b32 v2, s3
        0x8E06_8202, // s_lshl_b32 s6, s2, 2
        0x7E02_0206, // v_mov_b32 v1, s6
        0xDC70_8000, // global_store_dword v1, v2, s[4:5]
        0x0004_0201,
        S_ENDPGM,
    ];
    for t in Target::GFX9 {
        let (mut gpu, ko) = tiny(t, &code);
        let out = gpu.alloc(4 * 16);
        let mut setup = gpu.setup(
            ko,
            &Launch::linear(16 * 64, 64, Args::new().ptr(out).done()),
        );
        setup.xccs = 8;
        for g in 0..16 {
            run_workgroup(&setup, [g, 0, 0], &gpu.mem, &RunControl::default()).unwrap();
        }
        let got: Vec<u32> = (0..16)
            .map(|g| gpu.mem.read_u32(out + 4 * g).unwrap())
            .collect();
        // gfx90a has no such register: it reads 0 there.
        let want: Vec<u32> = (0..16)
            .map(|g| if t == Target::Gfx942 { g % 8 } else { 0 })
            .collect();
        assert_eq!(got, want, "{t}");
    }
}

#[test]
fn scratch_kernel_without_scratch_backing() {
    for t in Target::GFX9 {
        let (mut gpu, base, co) = kernels(t);
        let k = base + co.symbol("scratch_spill.kd");
        let args = Args::new().ptr(0).ptr(0).i32(0).done();
        let mut l = Launch::linear(64, 64, args);
        l.scratch = None;
        let per_item = gpu.descriptor(k).private_segment_fixed_size;
        assert!(per_item > 0);
        assert_eq!(
            gpu.run(k, &l).unwrap_err(),
            WaveError::ScratchUnavailable {
                bytes_per_work_item: per_item
            },
            "{t}"
        );
        // And a backing too small for the slot asked for.
        l.scratch = Some(1024);
        assert!(
            matches!(
                gpu.run(k, &l).unwrap_err(),
                WaveError::ScratchTooSmall { .. }
            ),
            "{t}"
        );
    }
}

#[test]
fn invalid_dispatches() {
    for t in Target::GFX9 {
        let (mut gpu, ko) = tiny(t, &[S_ENDPGM]);
        let mut l = one_wave(0);
        l.workgroup = [64, 32, 1];
        l.grid = [64, 32, 1];
        assert!(
            matches!(gpu.run(ko, &l).unwrap_err(), WaveError::InvalidDispatch(_)),
            "{t}"
        );
        l.workgroup = [0, 1, 1];
        assert!(
            matches!(gpu.run(ko, &l).unwrap_err(), WaveError::InvalidDispatch(_)),
            "{t}"
        );
        let setup = gpu.setup(ko, &one_wave(0));
        let e = run_workgroup(&setup, [5, 0, 0], &gpu.mem, &RunControl::default()).unwrap_err();
        assert!(
            matches!(e, WaveError::InvalidDispatch(_)),
            "{t}: a group outside the grid"
        );
    }
}

#[test]
fn runaway_loop_stops_at_the_budget() {
    for t in Target::GFX9 {
        let (mut gpu, ko) = tiny(t, &[V_MOV_V1_0, S_BRANCH_SELF]);
        let mut l = one_wave(0);
        l.budget = 100_000;
        match gpu.run(ko, &l).unwrap_err() {
            WaveError::BudgetExhausted { executed, pc } => {
                assert!((100_000..110_000).contains(&executed), "{t}: {executed}");
                assert_eq!(pc, ko + ENTRY + 4, "{t}");
            }
            e => panic!("{t}: {e}"),
        }
    }
}

#[test]
fn runaway_loop_stops_when_cancelled() {
    let (mut gpu, ko) = tiny(Target::Gfx90a, &[S_BRANCH_SELF]);
    let setup = gpu.setup(ko, &one_wave(0));
    let cancel = AtomicBool::new(false);
    let control = RunControl {
        cancel: Some(&cancel),
        max_wave_instructions: u64::MAX,
        scratch_slot: 0,
    };
    let e = std::thread::scope(|s| {
        let h = s.spawn(|| run_workgroup(&setup, [0, 0, 0], &gpu.mem, &control));
        std::thread::sleep(std::time::Duration::from_millis(30));
        cancel.store(true, Ordering::Relaxed);
        h.join().unwrap()
    });
    assert_eq!(e.unwrap_err(), WaveError::Cancelled { pc: ko + ENTRY });
}

#[test]
fn code_cache_is_stale_until_invalidated() {
    for t in Target::GFX9 {
        let code = [
            S_LOAD_OUT[0],
            S_LOAD_OUT[1],
            S_WAITCNT_LGKM,
            V_MOV_V1_0,
            V_MOV_V2_7,
            GLOBAL_STORE[0],
            GLOBAL_STORE[1],
            S_ENDPGM,
        ];
        let (mut gpu, ko) = tiny(t, &code);
        let out = gpu.alloc(4);
        gpu.run(ko, &one_wave(out)).unwrap();
        assert_eq!(gpu.mem.read_u32(out).unwrap(), 7, "{t}");
        // Patch the code: v_mov_b32 v2, 9. The cached decode still runs the old code...
        gpu.mem.write_u32(ko + ENTRY + 16, V_MOV_V2_9).unwrap();
        gpu.run(ko, &one_wave(out)).unwrap();
        assert_eq!(
            gpu.mem.read_u32(out).unwrap(),
            7,
            "{t}: stale until invalidated"
        );
        let before = gpu.code.stats();
        // ...until the instruction cache is invalidated.
        gpu.code.invalidate();
        gpu.run(ko, &one_wave(out)).unwrap();
        assert_eq!(
            gpu.mem.read_u32(out).unwrap(),
            9,
            "{t}: new code after invalidation"
        );
        let after = gpu.code.stats();
        assert_eq!(after.invalidations, before.invalidations + 1);
        assert!(after.decoded > before.decoded);
    }
}
