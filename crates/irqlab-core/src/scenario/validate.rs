//! Range checks. Each error is one sentence naming the field and the
//! accepted range.

use super::config::*;
use crate::error::Error;

fn int_range(field: &str, v: u64, lo: u64, hi: u64) -> Result<(), Error> {
    if v < lo || v > hi {
        return Err(Error::field(field, format!("must be between {lo} and {hi} (got {v})")));
    }
    Ok(())
}

fn float_range(field: &str, v: f64, lo: f64, hi: f64) -> Result<(), Error> {
    if !v.is_finite() || v < lo || v > hi {
        return Err(Error::field(field, format!("must be between {lo} and {hi} (got {v})")));
    }
    Ok(())
}

const MAX_CYCLES: u64 = 1_000_000_000;
const MAX_NS: u64 = 10_000_000_000;

pub(crate) fn validate(c: &Config) -> Result<(), Error> {
    float_range("run.duration_s", c.run.duration_s, 1e-6, 3600.0)?;
    float_range("run.warmup_s", c.run.warmup_s, 0.0, 3600.0)?;

    int_range("cpu.app_cores", c.cpu.app_cores as u64, 1, 1024)?;
    float_range("cpu.freq_ghz", c.cpu.freq_ghz, 0.1, 10.0)?;
    int_range("cpu.wakeup_latency_ns", c.cpu.wakeup_latency_ns, 0, MAX_NS)?;

    let k = &c.costs;
    for (name, v) in [
        ("costs.hardirq_cycles", k.hardirq_cycles),
        ("costs.softirq_entry_cycles", k.softirq_entry_cycles),
        ("costs.napi_poll_cycles", k.napi_poll_cycles),
        ("costs.rx_packet_cycles", k.rx_packet_cycles),
        ("costs.wakeup_cycles", k.wakeup_cycles),
        ("costs.epoll_wait_cycles", k.epoll_wait_cycles),
        ("costs.epoll_event_cycles", k.epoll_event_cycles),
        ("costs.recv_cycles", k.recv_cycles),
        ("costs.send_cycles", k.send_cycles),
        ("costs.send_cycles_per_64b", k.send_cycles_per_64b),
        ("costs.context_switch_cycles", k.context_switch_cycles),
        ("costs.interrupt_penalty_cycles", k.interrupt_penalty_cycles),
        ("costs.irq_cold_cycles", k.irq_cold_cycles),
        ("costs.timer_irq_cycles", k.timer_irq_cycles),
        ("costs.tx_clean_cycles", k.tx_clean_cycles),
        ("costs.busy_poll_iteration_cycles", k.busy_poll_iteration_cycles),
    ] {
        int_range(name, v, 0, MAX_CYCLES)?;
    }
    // A spinning busy-poll loop must take time, or simulated time would
    // never advance.
    if k.busy_poll_iteration_cycles == 0 && c.epoll.busy_poll_usecs > 0 {
        return Err(Error::field(
            "costs.busy_poll_iteration_cycles",
            "must be at least 1 when epoll.busy_poll_usecs is above 0",
        ));
    }
    if k.epoll_wait_cycles == 0 && !c.epoll.blocking {
        return Err(Error::field(
            "costs.epoll_wait_cycles",
            "must be at least 1 when epoll.blocking is false, or a non-blocking loop would spin in zero time",
        ));
    }

    int_range("nic.queues", c.nic.queues as u64, 0, 1024)?;
    int_range("nic.rx-ring-size", c.nic.rx_ring_size as u64, 1, 65_536)?;
    int_range("nic.tx-ring-size", c.nic.tx_ring_size as u64, 1, 65_536)?;
    if c.nic.irq_routing == IrqRouting::Packed {
        int_range("nic.irq_cores", c.nic.irq_cores as u64, 1, 1024)?;
    }
    if c.nic.irq_routing == IrqRouting::Aligned && c.queues() != c.cpu.app_cores {
        return Err(Error::field(
            "nic.queues",
            format!(
                "must equal cpu.app_cores ({}) or be 0 with irq_routing = \"aligned\" (got {})",
                c.cpu.app_cores, c.nic.queues
            ),
        ));
    }
    int_range("nic.wire_latency_ns", c.nic.wire_latency_ns, 0, MAX_NS)?;
    int_range("nic.dma_latency_ns", c.nic.dma_latency_ns, 0, MAX_NS)?;

    // ethtool accepts these as u32; mlx5 limits rx-usecs to 4095 µs and
    // rx-frames to 65535.
    int_range("coalesce.rx-usecs", c.coalesce.rx_usecs as u64, 0, 4095)?;
    int_range("coalesce.rx-frames", c.coalesce.rx_frames as u64, 0, 65_535)?;
    int_range("coalesce.tx-usecs", c.coalesce.tx_usecs as u64, 0, 4095)?;
    int_range("coalesce.tx-frames", c.coalesce.tx_frames as u64, 0, 65_535)?;

    int_range("napi.napi_defer_hard_irqs", c.napi.napi_defer_hard_irqs as u64, 0, i32::MAX as u64)?;
    int_range("napi.gro_flush_timeout", c.napi.gro_flush_timeout, 0, u32::MAX as u64 * 1000)?;
    int_range("napi.irq_suspend_timeout", c.napi.irq_suspend_timeout, 0, u32::MAX as u64 * 1000)?;
    int_range("napi.weight", c.napi.weight as u64, 1, 1024)?;
    int_range("napi.netdev_budget", c.napi.netdev_budget as u64, 1, 1_000_000)?;
    int_range("napi.netdev_budget_usecs", c.napi.netdev_budget_usecs as u64, 1, 1_000_000)?;
    int_range("napi.max_softirq_restart", c.napi.max_softirq_restart as u64, 1, 1000)?;

    int_range("epoll.busy_poll_usecs", c.epoll.busy_poll_usecs as u64, 0, u32::MAX as u64)?;
    // EPIOCSPARAMS refuses budgets above NAPI_POLL_WEIGHT without CAP_NET_ADMIN;
    // the model allows the kernel's u16 range.
    int_range("epoll.busy_poll_budget", c.epoll.busy_poll_budget as u64, 0, u16::MAX as u64)?;
    int_range("epoll.maxevents", c.epoll.maxevents as u64, 1, 1 << 20)?;

    match c.app.service {
        ServiceDist::Fixed { cycles } => int_range("app.service.cycles", cycles, 0, MAX_CYCLES)?,
        ServiceDist::Exponential { mean_cycles } => {
            int_range("app.service.mean_cycles", mean_cycles, 1, MAX_CYCLES)?
        }
        ServiceDist::Uniform { min_cycles, max_cycles } => {
            int_range("app.service.min_cycles", min_cycles, 0, MAX_CYCLES)?;
            int_range("app.service.max_cycles", max_cycles, min_cycles, MAX_CYCLES)?;
        }
    }
    int_range("app.service_cycles_per_64b", c.app.service_cycles_per_64b, 0, MAX_CYCLES)?;

    let l = &c.load;
    int_range("load.clients", l.clients as u64, 1, 10_000)?;
    int_range("load.threads_per_client", l.threads_per_client as u64, 1, 10_000)?;
    int_range("load.connections_per_thread", l.connections_per_thread as u64, 1, 100_000)?;
    int_range("load.connections", l.connections() as u64, 1, 1_000_000)?;
    int_range("load.depth", l.depth as u64, 1, 1024)?;
    int_range("load.think_time_ns", l.think_time_ns, 0, MAX_NS)?;
    if let Some(q) = l.qps {
        float_range("load.qps", q, 1.0, 1e9)?;
    }
    for (name, s) in [("load.key_size", l.key_size), ("load.value_size", l.value_size)] {
        if let SizeCfg::Fixed { bytes } = s {
            int_range(&format!("{name}.bytes"), bytes as u64, 1, 1 << 20)?;
        }
    }
    float_range("load.get_fraction", l.get_fraction, 0.0, 1.0)?;
    Ok(())
}
