//! The whole generator (connections, epoll loop, parser, accounting) against
//! an in-process fake memcached that can dribble its replies out a few bytes
//! per write, so replies reach the parser split at arbitrary points and
//! several pipelined replies share one read. No memcached needed.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use irqlab_core::workload::{InterArrivalKind, SizeDist};
use irqlab_loadgen::{run, Config, Mode};

#[derive(Clone, Copy)]
struct Fake {
    /// Write replies this many bytes at a time (0: whole).
    chunk: usize,
    /// Stop answering (but go on reading) after this many replies to gets,
    /// over all connections: a server that hangs mid-run.
    silent_after: Option<usize>,
}

const FAKE: Fake = Fake {
    chunk: 0,
    silent_after: None,
};

fn start(fake: Fake) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let store: Arc<Mutex<HashMap<Vec<u8>, Vec<u8>>>> = Arc::default();
    let gets = Arc::new(AtomicUsize::new(0));
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let store = Arc::clone(&store);
            let gets = Arc::clone(&gets);
            thread::spawn(move || serve(conn, fake, &store, &gets));
        }
    });
    addr
}

fn serve(conn: TcpStream, fake: Fake, store: &Mutex<HashMap<Vec<u8>, Vec<u8>>>, gets: &AtomicUsize) {
    conn.set_nodelay(true).unwrap();
    let mut out = conn.try_clone().unwrap();
    let mut r = BufReader::new(conn);
    let mut line = Vec::new();
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line).trim_end().to_string();
        let parts: Vec<&str> = text.split(' ').collect();
        let reply = match parts[0] {
            "set" => {
                let n: usize = parts[4].parse().unwrap();
                let mut data = vec![0; n + 2];
                if r.read_exact(&mut data).is_err() {
                    return;
                }
                data.truncate(n);
                store
                    .lock()
                    .unwrap()
                    .insert(parts[1].as_bytes().to_vec(), data);
                b"STORED\r\n".to_vec()
            }
            "get" => match store.lock().unwrap().get(parts[1].as_bytes()) {
                Some(v) => {
                    let mut m = format!("VALUE {} 0 {}\r\n", parts[1], v.len()).into_bytes();
                    m.extend_from_slice(v);
                    m.extend_from_slice(b"\r\nEND\r\n");
                    m
                }
                None => b"END\r\n".to_vec(),
            },
            _ => b"ERROR\r\n".to_vec(),
        };
        if parts[0] == "get"
            && fake
                .silent_after
                .is_some_and(|n| gets.fetch_add(1, Ordering::Relaxed) >= n)
        {
            continue;
        }
        let ok = if fake.chunk == 0 {
            out.write_all(&reply).is_ok()
        } else {
            reply.chunks(fake.chunk).all(|c| {
                let ok = out.write_all(c).is_ok();
                thread::sleep(Duration::from_micros(20));
                ok
            })
        };
        if !ok {
            return;
        }
    }
}

fn config(addr: SocketAddr) -> Config {
    Config {
        server: addr,
        connections: 2,
        depth: 4,
        duration_s: 0.3,
        records: 300,
        ..Config::default()
    }
}

#[test]
fn closed_loop_replies_split_into_tiny_writes() {
    for chunk in [1, 3, 7] {
        let addr = start(Fake { chunk, ..FAKE });
        let r = run(&Config {
            get_fraction: 0.8,
            ..config(addr)
        })
        .unwrap();
        assert_eq!(r.errors, 0, "chunk {chunk}: {:?}", r.first_error);
        assert_eq!(r.timeouts, 0);
        assert_eq!(r.misses, 0);
        // A reply a byte at a time takes milliseconds: few requests, but each
        // one parsed across many reads.
        assert!(r.requests > 5, "chunk {chunk}: {} requests", r.requests);
        assert_eq!(r.preload.as_ref().unwrap().errors, 0);
    }
}

#[test]
fn large_values_grow_the_read_buffer() {
    let addr = start(FAKE);
    let cfg = Config {
        value_size: SizeDist::Fixed(300_000),
        records: 20,
        get_fraction: 0.7,
        ..config(addr)
    };
    let r = run(&cfg).unwrap();
    assert_eq!(r.errors, 0, "{:?}", r.first_error);
    assert!(r.requests > 5);
}

#[test]
fn open_loop_sends_on_schedule() {
    let addr = start(FAKE);
    let mut counts = Vec::new();
    for (spin_us, kind) in [
        (0, InterArrivalKind::Exponential),
        (50, InterArrivalKind::Exponential),
        (0, InterArrivalKind::FbIa),
    ] {
        let cfg = Config {
            mode: Mode::Open {
                qps: 2000.0,
                interarrival: kind,
            },
            duration_s: 0.5,
            connections: 4,
            spin_us,
            ..config(addr)
        };
        let r = run(&cfg).unwrap();
        assert_eq!(r.errors, 0, "{:?}", r.first_error);
        assert_eq!(r.timeouts, 0);
        // About 1000 sends in 0.5 s (Poisson: sd about 32).
        assert!(
            (850..=1150).contains(&r.requests),
            "{} requests",
            r.requests
        );
        assert_eq!(r.offered_qps, Some(2000.0));
        assert!(r.send_lag_us.unwrap().p50.is_some());
        counts.push(r.requests);
    }
    // The send times are fixed by the seed: spinning or not, the same
    // requests fall in the window.
    assert_eq!(counts[0], counts[1]);
}

#[test]
fn batched_sends_keep_the_rate_and_count_early_sends_from_their_write() {
    let addr = start(FAKE);
    let open = |batch_us| Config {
        mode: Mode::Open {
            qps: 2000.0,
            interarrival: InterArrivalKind::Exponential,
        },
        duration_s: 0.5,
        connections: 4,
        batch_us,
        ..config(addr)
    };
    let exact = run(&open(0)).unwrap();
    // Send times within 1 ms (the most) of a wake-up go with it: about
    // two in five, at 500 per second per connection.
    let batched = run(&open(1000)).unwrap();
    assert_eq!(batched.errors, 0, "{:?}", batched.first_error);
    assert_eq!(batched.timeouts, 0);
    assert_eq!(batched.batch_us, 1000);
    // The same schedule, so (but for the window's edges, by at most the
    // batch) the same requests are measured.
    let diff = exact.requests.abs_diff(batched.requests);
    assert!(diff <= 20, "{} against {} requests", exact.requests, batched.requests);
    // An early send is timed from its write: no latency below the wire's
    // round trip (a negative one would show as 0).
    let p50 = batched.latency_us.p50.expect("samples");
    assert!(p50 > 1.0, "median latency {p50} us");
    // Fewer wake-ups: a send lag is recorded for on-time sends only.
    assert!(batched.send_lag_us.unwrap().p50.is_some());
}

#[test]
fn a_server_that_goes_silent_mid_run_did_not_keep_up() {
    // It answers 300 gets, then reads on and answers nothing: the closed
    // loop's 4 connections each hold one request for the rest of the run.
    // Counted as timeouts that is 4 of some 300 requests (1 %, and the run
    // used to exit 0); as stalled connection-time it is most of the window.
    let addr = start(Fake {
        silent_after: Some(300),
        ..FAKE
    });
    let cfg = Config {
        connections: 4,
        depth: 1,
        duration_s: 1.0,
        timeout_ms: 200,
        ..config(addr)
    };
    let r = run(&cfg).unwrap();
    assert!(r.requests > 0 && r.requests <= 300, "{} requests", r.requests);
    assert_eq!(r.timeouts, 4);
    assert!(r.stalled_fraction > 0.5, "stalled {}", r.stalled_fraction);
    assert!(!r.server_kept_up);
    let why = r.over_budget().expect("over the budget");
    assert!(why.contains("did not keep up") && why.contains("stalled"), "{why}");
    assert!(r.unanswered().is_none() && r.behind_schedule().is_none());

    // The same server answering throughout: nothing stalled (2 s: its
    // threads share the machine with the other tests of this binary).
    let fine = run(&Config {
        timeout_ms: 2000,
        ..config(start(FAKE))
    })
    .unwrap();
    assert_eq!(fine.stalled_fraction, 0.0);
    assert!(fine.server_kept_up && fine.over_budget().is_none());
}

#[test]
fn open_loop_into_a_silent_server_counts_what_never_left() {
    // Open loop, 2 connections x depth 4: once the server stops, 8 requests
    // wait for replies and every later one waits for a slot that never
    // frees. Those are the server's doing (never sent, not late), and the
    // throughput is what was answered in the window, not the target. (How
    // many of the hundred answered sends waited for a slot depends on how
    // fast the fake answers on a busy machine: not asserted.)
    let addr = start(Fake {
        silent_after: Some(100),
        ..FAKE
    });
    let r = run(&Config {
        mode: Mode::Open {
            qps: 2000.0,
            interarrival: InterArrivalKind::Exponential,
        },
        duration_s: 1.0,
        timeout_ms: 200,
        // Generous: whether the sends were on time on a busy machine is not
        // what this test is about.
        late_us: 50_000,
        ..config(addr)
    })
    .unwrap();
    assert_eq!(r.timeouts, 8);
    assert!(r.unsent > 1500, "{} unsent", r.unsent);
    assert!(r.achieved_qps < 200.0, "{} QPS", r.achieved_qps);
    assert!(r.failed_fraction > 0.8);
    assert_eq!(r.schedule_kept, Some(true), "late {:?}", r.late_fraction);
    // Never sent because every slot held an unanswered request: none of it
    // is the generator's backlog.
    assert_eq!(r.unsent_backlog, 0);
    assert!(!r.server_kept_up);
}

#[test]
fn request_bound_stops_at_exactly_n() {
    let addr = start(FAKE);
    let cfg = Config {
        requests: Some(500),
        duration_s: 10.0,
        threads: 2,
        connections: 4,
        ..config(addr)
    };
    let r = run(&cfg).unwrap();
    assert_eq!(r.requests, 500);
    assert_eq!(r.stopped_by, "requests");
    assert!(r.duration_s < 5.0);
}

#[test]
fn refused_target_never_connects() {
    let cfg = Config {
        server: "198.20.0.1:11211".parse().unwrap(),
        ..Config::default()
    };
    let e = run(&cfg).unwrap_err().to_string();
    assert!(
        e.starts_with("--server") && e.contains("198.18.0.0/15"),
        "{e}"
    );
}
