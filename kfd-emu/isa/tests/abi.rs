//! The wave start state against the AMDGPU ABI: a hand-written kernel (tests/kernels/abi.s)
//! with every user and system SGPR enabled dumps its registers, for gfx90a (private segment
//! buffer, flat scratch init) and gfx942 (architected flat scratch).

use crate::common;

use common::elf::{kernels_dir, CodeObject};
use common::gpu::*;
use kfd_emu_isa::{run_workgroup, RunControl, Target};

fn dump(
    t: Target,
    grid: [u32; 3],
    wg: [u16; 3],
    group: [u32; 3],
    slot: u32,
) -> (Vec<u32>, u64, kfd_emu_isa::DispatchSetup) {
    let co = CodeObject::load(&kernels_dir().join(format!("abi-{}.co", t.name())));
    let mut gpu = Gpu::new(t);
    let base = gpu.load(&co);
    let k = base + co.symbol("abi_dump.kd");
    let out = gpu.alloc(1024);
    let mut l = Launch::new(grid, wg, Args::new().ptr(out).done());
    l.scratch = Some(64 << 10);
    let mut setup = gpu.setup(k, &l);
    setup.dispatch_id = 0x1234_5678_9ABC;
    let control = RunControl {
        scratch_slot: slot,
        ..RunControl::default()
    };
    let st = run_workgroup(&setup, group, &gpu.mem, &control).unwrap();
    assert_eq!(st.waves, 1);
    (to_u32(&gpu.download(out, 1024)), out, setup)
}

fn lo(x: u64) -> u32 {
    x as u32
}
fn hi(x: u64) -> u32 {
    (x >> 32) as u32
}

#[test]
fn gfx90a_start_state() {
    let (d, _, s) = dump(Target::Gfx90a, [8, 12, 16], [4, 4, 4], [1, 2, 3], 1);
    let desc = s.descriptor;
    assert_eq!(desc.user_sgpr_count(), 15);
    let scratch = s.scratch.unwrap();
    let wave_offset = s.scratch_per_slot(); // slot 1, wave 0
    assert_eq!(s.scratch_per_wave(), 1024);
    // Private segment buffer: the queue's scratch V# (swizzled, 4-byte elements, stride 64 lanes).
    assert_eq!(d[0], lo(scratch.base));
    assert_eq!(d[1], (hi(scratch.base) & 0xFFFF) | 1 << 31);
    assert_eq!(d[2], scratch.size as u32);
    assert_eq!((d[3] >> 21) & 3, 3, "index stride 64");
    assert_eq!((d[3] >> 23) & 1, 1, "add_tid_enable");
    assert_eq!(
        [d[4], d[5]],
        [lo(s.dispatch_packet_address), hi(s.dispatch_packet_address)]
    );
    assert_eq!([d[6], d[7]], [lo(s.queue_address), hi(s.queue_address)]);
    assert_eq!([d[8], d[9]], [lo(s.kernarg_address), hi(s.kernarg_address)]);
    assert_eq!([d[10], d[11]], [0x5678_9ABC, 0x1234]);
    assert_eq!(
        [d[12], d[13]],
        [lo(scratch.base), hi(scratch.base)],
        "flat scratch init"
    );
    assert_eq!(d[14], 16, "private segment size");
    assert_eq!([d[15], d[16], d[17]], [1, 2, 3], "work-group ids");
    assert_eq!(d[18], 1 << 31 | 1, "work-group info: first wave, 1 wave");
    assert_eq!(d[19], wave_offset as u32, "private segment wave offset");
    // v0: x | y << 10 | z << 20, x fastest.
    for lane in 0..64u32 {
        let (x, y, z) = (lane % 4, lane / 4 % 4, lane / 16);
        assert_eq!(
            d[64 + lane as usize],
            x | y << 10 | z << 20,
            "v0 of lane {lane}"
        );
    }
}

#[test]
fn gfx942_start_state() {
    let (d, _, s) = dump(Target::Gfx942, [8, 12, 16], [4, 4, 4], [1, 2, 3], 2);
    assert_eq!(s.descriptor.user_sgpr_count(), 9);
    let scratch = s.scratch.unwrap();
    let wave_scratch = scratch.base + 2 * s.scratch_per_slot();
    assert_eq!(
        [d[0], d[1]],
        [lo(s.dispatch_packet_address), hi(s.dispatch_packet_address)]
    );
    assert_eq!([d[2], d[3]], [lo(s.queue_address), hi(s.queue_address)]);
    assert_eq!([d[4], d[5]], [lo(s.kernarg_address), hi(s.kernarg_address)]);
    assert_eq!([d[6], d[7]], [0x5678_9ABC, 0x1234]);
    assert_eq!(d[8], 16);
    assert_eq!([d[9], d[10], d[11]], [1, 2, 3]);
    assert_eq!(d[12], 1 << 31 | 1);
    assert_eq!(d[13], (wave_scratch - scratch.base) as u32);
    // Architected flat scratch: FLAT_SCRATCH holds the wave's scratch base.
    assert_eq!([d[20], d[21]], [lo(wave_scratch), hi(wave_scratch)]);
}

#[test]
fn partial_work_group_at_the_grid_edge() {
    for t in Target::GFX9 {
        // Grid 6x5x4 of 4x4x4 groups: group (1, 1, 0) holds 2 x 1 x 4 = 8 work-items.
        let (d, _, _) = dump(t, [6, 5, 4], [4, 4, 4], [1, 1, 0], 0);
        for lane in 0..64u32 {
            let got = d[64 + lane as usize];
            if lane < 8 {
                let (x, y, z) = (lane % 2, 0, lane / 2);
                assert_eq!(got, x | y << 10 | z << 20, "{t} v0 of lane {lane}");
            } else {
                assert_eq!(
                    got, 0,
                    "{t} lane {lane} is outside the group and stores nothing"
                );
            }
        }
    }
}
