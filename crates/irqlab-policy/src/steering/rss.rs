//! Receive side scaling: the NIC hashes a packet's addresses and ports with
//! the Toeplitz function and looks the low bits of the hash up in its
//! indirection table to choose an RX queue (Microsoft's RSS specification;
//! Linux: `ethtool -X`, `netdev_rss_key_fill`, `ethtool_rxfh_indir_default`).
//! Each queue's interrupt goes to one core, so the table also chooses the
//! interrupt processing core: the IAPS paper's baseline with eight queues.

/// The key of Microsoft's RSS verification suite, which many drivers also
/// use as their default.
pub const DEFAULT_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b,
    0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac,
    0x01, 0xfa,
];

/// The Toeplitz hash of `input` under `key`: for every set bit of the
/// input, XOR in the 32 key bits starting at that bit's position. `key`
/// must be at least 4 bytes longer than `input`.
pub fn toeplitz(key: &[u8], input: &[u8]) -> u32 {
    assert!(key.len() >= input.len() + 4, "the Toeplitz key must be 4 bytes longer than the input");
    let mut hash = 0u32;
    // The 32-bit window of the key at the current input bit, and the next
    // key bits to shift in.
    let mut window = u32::from_be_bytes([key[0], key[1], key[2], key[3]]);
    for (i, byte) in input.iter().enumerate() {
        let next = key[i + 4];
        for bit in 0..8 {
            if byte & (0x80 >> bit) != 0 {
                hash ^= window;
            }
            window = (window << 1) | u32::from((next >> (7 - bit)) & 1);
        }
    }
    hash
}

/// The RSS hash of a TCP/IPv4 flow as the NIC computes it: source address,
/// destination address, source port, destination port, in network order.
pub fn tcp4_hash(key: &[u8], src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> u32 {
    let mut input = [0u8; 12];
    input[..4].copy_from_slice(&src);
    input[4..8].copy_from_slice(&dst);
    input[8..10].copy_from_slice(&sport.to_be_bytes());
    input[10..].copy_from_slice(&dport.to_be_bytes());
    toeplitz(key, &input)
}

/// An RSS indirection table: entry `hash % len` names the RX queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RssTable {
    queues: Vec<u32>,
}

impl RssTable {
    /// `ethtool_rxfh_indir_default`: `entries` entries spreading `queues`
    /// queues round-robin (entry i → queue i mod queues). Fails with one
    /// sentence when either is zero.
    pub fn spread(entries: u32, queues: u32) -> Result<RssTable, String> {
        if entries == 0 || queues == 0 {
            return Err(format!(
                "an RSS table needs at least one entry and one queue (got {entries} entries, {queues} queues)."
            ));
        }
        Ok(RssTable { queues: (0..entries).map(|i| i % queues).collect() })
    }

    /// The RX queue of a packet with RSS hash `hash`.
    pub fn queue(&self, hash: u32) -> u32 {
        self.queues[hash as usize % self.queues.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Microsoft's RSS verification suite, TCP/IPv4 rows (source → destination,
    /// hash with ports).
    #[test]
    fn toeplitz_matches_the_rss_verification_suite() {
        for (src, sport, dst, dport, want) in [
            ([66, 9, 149, 187], 2794, [161, 142, 100, 80], 1766, 0x51cc_c178u32),
            ([199, 92, 111, 2], 14230, [65, 69, 140, 83], 4739, 0xc626_b0ea),
            ([24, 19, 198, 95], 12898, [12, 22, 207, 184], 38024, 0x5c2b_394a),
            ([38, 27, 205, 30], 48228, [209, 142, 163, 6], 2217, 0xafc7_327f),
            ([153, 39, 163, 191], 44251, [202, 188, 127, 2], 1303, 0x10e8_28a2),
        ] {
            assert_eq!(tcp4_hash(&DEFAULT_KEY, src, dst, sport, dport), want, "{src:?}:{sport} -> {dst:?}:{dport}");
        }
        // Addresses only (the IPv4 rows of the suite).
        assert_eq!(toeplitz(&DEFAULT_KEY, &[66, 9, 149, 187, 161, 142, 100, 80]), 0x323e_8fc2);
    }

    #[test]
    fn the_default_table_spreads_queues_round_robin() {
        let t = RssTable::spread(128, 8).unwrap();
        for (hash, want) in [(0u32, 0u32), (7, 7), (8, 0), (127, 7), (128, 0), (0x51cc_c178, 0x78 % 8)] {
            assert_eq!(t.queue(hash), want, "hash {hash:#x}");
        }
        assert!(RssTable::spread(0, 8).unwrap_err().contains("0 entries"));
        assert!(RssTable::spread(128, 0).unwrap_err().contains("0 queues"));
    }
}
