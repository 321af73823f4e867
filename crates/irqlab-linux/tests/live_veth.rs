//! The real kernel, through a veth pair in network namespaces each test
//! makes and always removes: show, apply every profile and read it back,
//! restore the exact previous values, and see a socket learn the veth's NAPI
//! id (Linux 6.13+); read the veth's per-queue statistics (`qstats-get`).
//! They need root, `ip` and `ethtool`, so `cargo test` leaves them out
//! (ignored); tests/python/test_rust_live.py runs them, and reports one
//! skipped with the reason where it cannot run. Run by hand where it cannot,
//! a test fails with a line starting "cannot run here:" rather than pass
//! without having tested anything.

use std::fs::File;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::Command;

use irqlab_knobs::Profile;
use irqlab_linux::netlink::netdev::NapiSet;
use irqlab_linux::ops::Kernel;
use irqlab_linux::{apply_in, device, napi_id, plan, queue_stats, restore_in, show, Error, QueueStats, StateStore, Value};

/// The testbed (docs/architecture.md, "The real side") in small: a server namespace with veth0
/// (198.18.0.1/30, GRO on) and a client namespace with its peer veth1
/// (198.18.0.2/30, GRO off), both deleted on drop, whatever happened. Each
/// test gives its own `tag`, so that tests run at once (in one process)
/// have namespaces of their own.
struct Testbed {
    server: String,
    client: String,
}

impl Testbed {
    fn create(tag: &str) -> Result<Testbed, String> {
        let pid = std::process::id();
        let bed = Testbed { server: format!("irqlab-t-{pid}-{tag}s"), client: format!("irqlab-t-{pid}-{tag}c") };
        run(&["ip", "netns", "add", &bed.server])?;
        run(&["ip", "netns", "add", &bed.client])?;
        let (s, c) = (bed.server.as_str(), bed.client.as_str());
        run(&["ip", "-n", s, "link", "add", "veth0", "type", "veth", "peer", "name", "veth1", "netns", c])?;
        run(&["ip", "-n", s, "addr", "add", "198.18.0.1/30", "dev", "veth0"])?;
        run(&["ip", "-n", c, "addr", "add", "198.18.0.2/30", "dev", "veth1"])?;
        for (ns, dev) in [(s, "lo"), (s, "veth0"), (c, "lo"), (c, "veth1")] {
            run(&["ip", "-n", ns, "link", "set", dev, "up"])?;
        }
        // GRO is what gives a veth its NAPI. veth_xmit hands a packet to
        // the peer's NAPI only if it "is eligible for GRO": the sending veth
        // must not do TSO (or the receiver must forward UDP GRO), else the
        // packet takes netif_rx and the backlog, and carries no NAPI id.
        run(&["ip", "netns", "exec", s, "ethtool", "-K", "veth0", "gro", "on"])?;
        run(&["ip", "netns", "exec", c, "ethtool", "-K", "veth1", "tso", "off"])?;
        Ok(bed)
    }

    /// Run `f` on a thread that has entered namespace `ns` (a network
    /// namespace is per thread; sockets made there belong to it).
    fn enter<T: Send>(&self, ns: &str, f: impl FnOnce() -> T + Send) -> T {
        let path = format!("/run/netns/{ns}");
        std::thread::scope(|s| {
            s.spawn(|| {
                let file = File::open(&path).expect("the namespace file");
                // SAFETY: plain syscall on a valid descriptor; affects only this thread.
                let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
                assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
                f()
            })
            .join()
            .expect("the test thread")
        })
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        let _ = run(&["ip", "netns", "del", &self.server]);
        let _ = run(&["ip", "netns", "del", &self.client]);
    }
}

fn run(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0]).args(&args[1..]).output().map_err(|e| format!("{}: {e}", args[0]))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// Why this test cannot run here, if it cannot.
fn skip_reason() -> Option<String> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    for tool in ["ip", "ethtool"] {
        if Command::new(tool).arg("-V").output().is_err() {
            return Some(format!("`{tool}` is not installed"));
        }
    }
    None
}

/// A state directory of this test's own, removed on drop.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("irqlab-live-state-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        ScratchDir(dir)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Fails the test for a reason that is the machine's, not the code's, in
/// the words tests/python/test_rust_live.py turns into a skip.
fn cannot_run(reason: &str) -> ! {
    panic!("cannot run here: {reason}")
}

#[test]
#[ignore = "live: needs root, ip and ethtool; run by tests/python/test_rust_live.py"]
fn show_apply_every_profile_and_restore_on_a_veth() {
    if let Some(reason) = skip_reason() {
        cannot_run(&format!("the live veth test needs root, ip and ethtool ({reason})"));
    }
    let bed = Testbed::create("r").expect("the test namespaces and veth pair");
    let scratch = ScratchDir::new();
    let store = StateStore::new(&scratch.0);
    let receiver = bed.enter(&bed.server, || {
        let report = show("veth0").expect("show veth0");
        assert_eq!(report.napis.len(), 1, "a veth with GRO on has one NAPI: {report:?}");
        let support = report.kernel.expect("kernel support");
        if !support.per_napi_config || !support.irq_suspend_timeout {
            return Err("this kernel has no per-NAPI configuration or IRQ suspension (Linux 6.13+)");
        }
        assert_eq!(report.coalesce, None, "veth has no coalescing");
        let id = report.napis[0].id;

        // Distinctive previous values, so that restore is seen to bring back these exactly.
        let mut kernel = Kernel::open().unwrap();
        let original = NapiSet { id, defer_hard_irqs: Some(7), gro_flush_timeout: Some(12_345), irq_suspend_timeout: Some(0), threaded: None };
        kernel.napi_set(original, "veth0").unwrap();

        for profile in Profile::ALL {
            let plan = plan("veth0", profile.name(), None).unwrap();
            assert!(plan.skipped.iter().all(|s| s.reason == "not supported by this device"), "{:?}", plan.skipped);
            let applied = apply_in(&plan, &store).unwrap();
            assert!(applied.warnings.is_empty(), "{:?}", applied.warnings);
            let knobs = profile.knobs().napi;
            let napi = &show("veth0").unwrap().napis[0];
            assert_eq!(
                (napi.defer_hard_irqs, napi.gro_flush_timeout, napi.irq_suspend_timeout),
                (Some(knobs.defer_hard_irqs), Some(knobs.gro_flush_timeout_ns), Some(knobs.irq_suspend_timeout_ns)),
                "after applying {profile}"
            );
        }
        // Every apply after the first kept the first one's saved state.
        let restored = restore_in("veth0", &store).unwrap();
        assert_eq!(restored.profile, Profile::ALL[0].name());
        assert!(!restored.state_file.exists());
        let napi = &show("veth0").unwrap().napis[0];
        assert_eq!((napi.defer_hard_irqs, napi.gro_flush_timeout, napi.irq_suspend_timeout), (Some(7), Some(12_345), Some(0)));
        assert!(matches!(restore_in("veth0", &store), Err(Error::NoSavedState { .. })));

        // One NAPI by id; an unknown id and a device without NAPI are refused.
        let one = plan("veth0", "busy-wait", Some(id)).unwrap();
        assert!(one.changes.iter().all(|c| c.napi_id == Some(id)));
        assert!(matches!(plan("veth0", "busy-wait", Some(id + 1000)), Err(Error::UnknownNapi { .. })));
        assert!(matches!(plan("lo", "busy-wait", None), Err(Error::NoNapi { .. })));
        assert!(matches!(device::resolve("irqlab-none"), Err(Error::NoSuchDevice { .. })));
        assert!(one.changes.iter().any(|c| c.to == Value::Int(5_000_000)));

        let receiver = UdpSocket::bind("198.18.0.1:0").unwrap();
        receiver.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        Ok((receiver, id))
    });
    // Outside the namespace thread, so that the message is the test's own.
    let (receiver, id) = receiver.unwrap_or_else(|reason| cannot_run(reason));

    // The client side: its veth has GRO off, hence no NAPI.
    bed.enter(&bed.client, || {
        assert!(matches!(plan("veth1", "busy-wait", None), Err(Error::NoNapi { .. })), "veth1 has GRO off");
        let sender = UdpSocket::bind("198.18.0.2:0").unwrap();
        sender.send_to(b"ping", receiver.local_addr().unwrap()).unwrap();
    });
    // A datagram that came in through veth0's NAPI carries its id.
    let mut buf = [0u8; 16];
    receiver.recv_from(&mut buf).unwrap();
    let incoming = napi_id::incoming_napi_id(receiver.as_raw_fd()).unwrap();
    assert_eq!(incoming, id, "SO_INCOMING_NAPI_ID names veth0's NAPI");
}

/// The sum of one counter over the queues of one type.
fn total(stats: &[QueueStats], queue_type: &str, counter: fn(&QueueStats) -> Option<u64>) -> Option<u64> {
    let values: Vec<u64> = stats.iter().filter(|q| q.queue_type == queue_type).filter_map(counter).collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

#[test]
#[ignore = "live: needs root, ip and ethtool; run by tests/python/test_rust_live.py"]
fn queue_stats_of_a_veth_grow_with_traffic_or_are_none() {
    if let Some(reason) = skip_reason() {
        cannot_run(&format!("the live veth test needs root, ip and ethtool ({reason})"));
    }
    const PACKETS: u64 = 5;
    let bed = Testbed::create("q").expect("the test namespaces and veth pair");
    let read = |ns: &str, dev: &'static str| bed.enter(ns, move || queue_stats(dev));
    let before = (read(&bed.server, "veth0").expect("qstats of veth0"), read(&bed.client, "veth1").expect("qstats of veth1"));
    let (Some(rx_before), Some(tx_before)) = before else {
        // A device without netdev_stat_ops (veth, up to Linux 6.18 at
        // least): no statistics, and that is an answer, not an error.
        assert_eq!(before, (None, None), "the two ends of a veth pair have the same driver");
        assert_eq!(read(&bed.server, "lo").expect("qstats of lo"), None, "loopback keeps no per-queue statistics");
        eprintln!("veth has no per-queue statistics on this kernel: queue_stats said None, as it should");
        return;
    };
    let rx_packets = |s: &QueueStats| s.rx_packets;
    let tx_packets = |s: &QueueStats| s.tx_packets;
    assert!(rx_before.iter().all(|q| q.queue_type == "rx" || q.queue_type == "tx"), "{rx_before:?}");

    // PACKETS datagrams from the client's veth1 to the server's veth0, each received.
    let receiver = bed.enter(&bed.server, || {
        let socket = UdpSocket::bind("198.18.0.1:0").unwrap();
        socket.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        socket
    });
    let to = receiver.local_addr().unwrap();
    bed.enter(&bed.client, || {
        let sender = UdpSocket::bind("198.18.0.2:0").unwrap();
        for _ in 0..PACKETS {
            sender.send_to(b"qstats", to).unwrap();
        }
    });
    let mut buf = [0u8; 16];
    for _ in 0..PACKETS {
        receiver.recv_from(&mut buf).expect("each datagram arrives within 5 s");
    }

    let rx_after = read(&bed.server, "veth0").unwrap().expect("veth0 still has statistics");
    let tx_after = read(&bed.client, "veth1").unwrap().expect("veth1 still has statistics");
    // Other traffic (neighbour discovery) may add to the counters, never take from them.
    let (rx0, rx1) = (total(&rx_before, "rx", rx_packets), total(&rx_after, "rx", rx_packets));
    let (tx0, tx1) = (total(&tx_before, "tx", tx_packets), total(&tx_after, "tx", tx_packets));
    assert!(rx0.is_some() || tx0.is_some(), "the driver reports neither rx nor tx packets: {rx_before:?} {tx_before:?}");
    if let (Some(a), Some(b)) = (rx0, rx1) {
        assert!(b >= a + PACKETS, "veth0 received {PACKETS} packets but its rx-packets went from {a} to {b}");
    }
    if let (Some(a), Some(b)) = (tx0, tx1) {
        assert!(b >= a + PACKETS, "veth1 sent {PACKETS} packets but its tx-packets went from {a} to {b}");
    }
}
