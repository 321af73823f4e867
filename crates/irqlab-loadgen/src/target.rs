//! Where the load may go. A load generator aimed at the wrong address is a
//! denial-of-service tool, so it talks only to this host's loopback
//! (127.0.0.0/8, ::1) and to the benchmarking range 198.18.0.0/15 (RFC 2544,
//! reserved for network device benchmarks; the irqlab testbed puts its
//! network namespaces there). Everything else is refused before any socket
//! is opened. Being in the range is necessary, not sufficient: [`crate::route`]
//! also asks the kernel whether the route to such an address stays on this
//! machine (no gateway) before the run starts.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};

/// Whether `ip` is loopback or in 198.18.0.0/15. An IPv4-mapped IPv6
/// address (`::ffff:a.b.c.d`) is judged by its IPv4 address.
pub fn is_allowed(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_allowed_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_allowed_v4(v4),
            None => v6.is_loopback(),
        },
    }
}

fn is_allowed_v4(ip: Ipv4Addr) -> bool {
    let [a, b, _, _] = ip.octets();
    a == 127 || (a == 198 && (b & 0xFE) == 18)
}

/// The refusal of a server outside loopback and 198.18.0.0/15 (one sentence).
pub fn outside(server: SocketAddr) -> String {
    format!(
        "--server {server} is outside loopback (127.0.0.0/8, ::1) and the benchmarking range 198.18.0.0/15; irqlab-loadgen sends load only there"
    )
}

/// Resolve `server` (`HOST:PORT`, e.g. `127.0.0.1:11211`, `[::1]:11211`,
/// `localhost:11211`) and check every address it resolves to; the error is
/// one sentence naming `--server`.
pub fn resolve(server: &str) -> Result<SocketAddr, String> {
    let addrs: Vec<SocketAddr> = server
        .to_socket_addrs()
        .map_err(|e| {
            format!("--server must be HOST:PORT with a resolvable host, e.g. 127.0.0.1:11211 (got {server:?}: {e})")
        })?
        .collect();
    let first = *addrs
        .first()
        .ok_or_else(|| format!("--server {server:?} resolves to no address"))?;
    if let Some(bad) = addrs.iter().find(|a| !is_allowed(a.ip())) {
        return Err(format!(
            "--server {server:?} resolves to {}, which is outside loopback (127.0.0.0/8, ::1) and the benchmarking range 198.18.0.0/15; irqlab-loadgen sends load only there",
            bad.ip()
        ));
    }
    if first.port() == 0 {
        return Err(format!(
            "--server port must be from 1 to 65535 (got {server:?})"
        ));
    }
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> bool {
        is_allowed(s.parse().unwrap())
    }

    #[test]
    fn allowed_and_refused_addresses() {
        for a in [
            "127.0.0.1",
            "127.255.255.254",
            "198.18.0.5",
            "198.18.0.1",
            "198.19.255.255",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:198.19.1.2",
        ] {
            assert!(ok(a), "{a} should be allowed");
        }
        for a in [
            "198.20.0.1",
            "198.17.255.255",
            "10.0.0.1",
            "8.8.8.8",
            "192.168.1.1",
            "0.0.0.0",
            "128.0.0.1",
            "::",
            "::2",
            "fe80::1",
            "2001:db8::1",
            "::ffff:8.8.8.8",
            "255.255.255.255",
        ] {
            assert!(!ok(a), "{a} should be refused");
        }
    }

    #[test]
    fn resolve_checks_every_address() {
        assert_eq!(
            resolve("127.0.0.1:11211").unwrap(),
            "127.0.0.1:11211".parse().unwrap()
        );
        assert_eq!(
            resolve("198.18.0.5:11211").unwrap(),
            "198.18.0.5:11211".parse().unwrap()
        );
        assert_eq!(
            resolve("[::1]:11211").unwrap(),
            "[::1]:11211".parse().unwrap()
        );
        for bad in [
            "198.20.0.1:11211",
            "10.0.0.1:11211",
            "8.8.8.8:11211",
            "[2001:db8::1]:80",
        ] {
            let e = resolve(bad).unwrap_err();
            assert!(e.contains("outside loopback"), "{e}");
            assert!(e.starts_with("--server"), "{e}");
        }
        for bad in ["127.0.0.1", "127.0.0.1:99999", "127.0.0.1:x", ""] {
            let e = resolve(bad).unwrap_err();
            assert!(e.starts_with("--server"), "{e}");
        }
        assert!(resolve("127.0.0.1:0").unwrap_err().contains("port"));
    }
}
