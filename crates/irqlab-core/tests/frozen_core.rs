//! A guest core frozen by a VM exit starts and completes nothing until its
//! vCPU enters guest mode again (`model/kernel/cpu.rs`, `model/vm/vcpu.rs`). The
//! model checks it with debug assertions (`model/kernel/sched.rs`:
//! `start_segment`, `core_segment_done`), so these runs test something only
//! in a debug build (`cargo test -p irqlab-core --test frozen_core`); a
//! release build reports them ignored. They are the runs that stopped on
//! "a frozen core completes nothing" while `kick` did not look at `frozen`
//! again after `resume_frame` completed a step whose effects took a VM exit
//! (a guest's doorbell write trapping on its own vCPU's core): the
//! interruption penalty then started on the frozen core. `make debug-check`
//! runs every scenario × profile the same way.

mod common;
use common::*;

const VIRTIO_ALIGNED: &str = include_str!("../../../scenarios/thesis/virtio-aligned.toml");
const VIRTIO_PACKED: &str = include_str!("../../../scenarios/thesis/virtio-packed.toml");
const IOMETER: &str = include_str!("../../../scenarios/vic/iometer.toml");
const PROFILES: [&str; 6] =
    ["no-coalescing", "adaptive-coalescing", "busy-wait", "irq-suspend", "irq-batching", "kernel-polling"];

#[test]
#[cfg_attr(not(debug_assertions), ignore = "checks debug assertions: run in a debug build")]
fn a_virtio_guests_tx_notification_at_a_steps_end_freezes_its_core_cleanly() {
    for base in [VIRTIO_ALIGNED, VIRTIO_PACKED] {
        let s = run_profile(base, "irq-batching", &["load.qps=200000", "run.duration_s=0.05"]);
        assert!(s.throughput_qps > 0.0);
    }
}

#[test]
#[cfg_attr(not(debug_assertions), ignore = "checks debug assertions: run in a debug build")]
fn a_storage_guests_doorbell_at_a_steps_end_freezes_its_core_cleanly() {
    for p in PROFILES {
        let s = run_profile(IOMETER, p, &["run.duration_s=0.02"]);
        assert!(s.throughput_qps > 0.0, "{p}");
    }
}
