//! Receive buffers on split pages, as Intel's drivers recycle them before
//! page_pool (`nic.rx_buffer_reuse = "split-page"`): ice in Linux 6.10,
//! like ixgbe, i40e and iavf before it (`ice_txrx.c`; the sources read are
//! in docs/notes/iaps-per-flow-cost-sources.md §2).
//!
//! Each descriptor's buffer is half of a 4 KiB page. When the poll has
//! handed a frame in one half to the stack, `ice_put_rx_buf` keeps the
//! page for the descriptor's next use, the other half, only if the driver
//! is its only other owner (`ice_can_reuse_rx_page`: `pgcnt - pagecnt_bias
//! > 1` fails it): the other half held the frame this descriptor took one
//! ring lap earlier, so the page is reused only if the stack has freed that
//! frame. If not, the driver drops its references and the refill
//! allocates and maps a new page (`ice_alloc_mapped_page`), whose other
//! half nothing holds. The test is made once per frame, in the loop at the
//! end of `ice_clean_rx_irq`, that is at the end of the poll that took it.
//!
//! A frame is freed when its socket's reader has read its bytes (the GRO
//! packet it is a fragment of is freed whole when read; the model frees
//! each frame at its own last byte, so a frame is freed up to one GRO
//! packet's read early) or when the stack dropped it. Not modelled: the
//! delay of `skb_attempt_defer_free`, which returns a read packet to the
//! polling core to be freed at its next `net_rx_action`.

/// One RX ring's buffers: for each descriptor, the frame in the other half
/// of its page (its stream and the stream's byte count at its end), if
/// any.
#[derive(Clone, Debug, Default)]
pub struct SplitPageRing {
    other_half: Vec<Option<(u32, u64)>>,
    /// Frames the ring has taken: the next one's descriptor is this
    /// modulo the ring's size.
    next: u64,
}

impl SplitPageRing {
    pub fn new(ring_size: u32) -> Self {
        SplitPageRing { other_half: vec![None; ring_size.max(1) as usize], next: 0 }
    }

    /// The next descriptor's frame, of `stream`, ending at the stream's
    /// `end` byte, was handed to the stack; `freed(s)` is the byte of stream
    /// s up to which the stack has freed its frames. True if the page is
    /// kept (reused), false if the refill must allocate a new one.
    pub fn put(&mut self, stream: u32, end: u64, freed: impl Fn(u32) -> u64) -> bool {
        let slot = (self.next % self.other_half.len() as u64) as usize;
        self.next += 1;
        let reused = match self.other_half[slot] {
            Some((s, e)) => e <= freed(s),
            None => true,
        };
        // A new page: its other half has held nothing.
        self.other_half[slot] = reused.then_some((stream, end));
        reused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_reused_only_once_the_frame_a_lap_earlier_is_freed() {
        // A ring of two descriptors, one stream of 1000-byte frames.
        let mut r = SplitPageRing::new(2);
        let freed_upto = std::cell::Cell::new(0u64);
        let freed = |_s: u32| freed_upto.get();
        // First lap: pages are new.
        assert!(r.put(0, 1000, freed));
        assert!(r.put(0, 2000, freed));
        // Second lap: frame 1 (ending at byte 1000) is unread.
        assert!(!r.put(0, 3000, freed));
        // Frame 2 was read: descriptor 1's page is kept.
        freed_upto.set(2000);
        assert!(r.put(0, 4000, freed));
        // Descriptor 0 has a new page: its other half held nothing.
        assert!(r.put(0, 5000, freed));
        // Descriptor 1's other half holds frame 4, unread.
        assert!(!r.put(0, 6000, freed));
    }

    #[test]
    fn each_stream_frees_its_own_frames() {
        let mut r = SplitPageRing::new(2);
        let freed = |s: u32| if s == 1 { u64::MAX } else { 0 };
        r.put(0, 100, freed);
        r.put(1, 100, freed);
        assert!(!r.put(1, 200, freed), "stream 0's frame is unread");
        assert!(r.put(0, 200, freed), "stream 1's frame was read");
    }
}
