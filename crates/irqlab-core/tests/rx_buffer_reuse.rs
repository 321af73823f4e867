//! Split-page receive buffers (`nic.rx_buffer_reuse = "split-page"`,
//! `model/devices/nic/split_page.rs`), by behaviour: a page is reused
//! while the stack frees frames within a ring lap, and the polling core
//! pays for new pages when sockets hold data longer.

use irqlab_core::{Scenario, Summary};

/// The IAPS paper's receiver under RFS for 30 ms, with `set` on top.
fn run(set: &[(&str, &str)]) -> Summary {
    let mut s = Scenario::from_toml_str(include_str!("../../../scenarios/iaps/bulk-8core.toml")).unwrap();
    for (k, v) in [("run.duration_s", "0.03"), ("run.warmup_s", "0.01"), ("steering.scheme", "\"rfs\""), ("bulk.streams", "8")]
        .iter()
        .chain(set)
    {
        s.set(k, v).unwrap_or_else(|e| panic!("{k}={v}: {e}"));
    }
    irqlab_core::run(&s).unwrap()
}

#[test]
fn readers_that_keep_up_free_every_page_within_a_lap() {
    let b = run(&[("nic.rx_buffer_reuse", "\"split-page\"")]).bulk.expect("bulk");
    let pct = b.rx_page_alloc_pct.expect("split-page reports its allocations");
    assert!(pct < 1.0, "{pct}");
    let always = [("nic.rx_buffer_reuse", "\"always\"")];
    assert_eq!(run(&always).bulk.expect("bulk").rx_page_alloc_pct, None, "\"always\" reports none");
}

#[test]
fn slow_readers_hold_pages_and_the_polling_core_allocates_new_ones() {
    // Copying at 2,000 cycles per KiB, eight readers on seven cores fall
    // behind: their sockets hold data for more than a ring lap.
    let slow = [("costs.copy_cycles_per_kib", "2000")];
    let split = run(&[slow[0], ("nic.rx_buffer_reuse", "\"split-page\"")]);
    let always = run(&[slow[0], ("nic.rx_buffer_reuse", "\"always\"")]);
    let pct = split.bulk.as_ref().unwrap().rx_page_alloc_pct.unwrap();
    assert!(pct > 5.0, "{pct}");
    let busy = |s: &Summary| s.bulk.as_ref().unwrap().core_busy_pct[0];
    assert!(busy(&split) > busy(&always) + 1.0, "{} vs {}", busy(&split), busy(&always));
    // Free pages cost nothing more.
    let free = run(&[slow[0], ("nic.rx_buffer_reuse", "\"split-page\""), ("costs.rx_page_alloc_cycles", "0")]);
    assert!((busy(&free) - busy(&always)).abs() < 0.5, "{} vs {}", busy(&free), busy(&always));
}

#[test]
fn split_pages_are_refused_outside_a_bulk_receiver() {
    let e = Scenario::from_toml_str("[nic]\nrx_buffer_reuse = \"split-page\"\n").map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("nic.rx_buffer_reuse") && e.contains("bulk"), "{e}");
    let e = Scenario::from_toml_str("[nic]\nrx_buffer_reuse = \"sometimes\"\n").map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("nic.rx_buffer_reuse") && e.contains("split-page"), "{e}");
}
