"""Plain-text rendering of summaries, profiles and benchmarks for the terminal.

ASCII (``us`` for microseconds) but for one character: a figure that does not
exist, such as the latency of a run in which no request completed, is shown
as an em dash, ``—`` (the load generator's convention), where ``n/a`` would
read as "not measured". Pass ``ascii_only=True`` for a stream that cannot
encode it (the CLI does so by itself); the dash is then ``-``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from irqlab.bench import BenchResult
from irqlab.bench_scale import CONNECTIONS_PER_CORE, EVENTS_PER_RUN, LoadRow, ScaleRow
from irqlab.summary import Summary

_NA = "n/a"
#: A figure that does not exist (no request completed: no latency).
NULL = "\u2014"
NULL_ASCII = "-"

_LATENCY = [("mean", "mean"), ("p50", "p50"), ("p95", "p95"), ("p99", "p99"), ("p99.9", "p999")]
_DROP_SITES = ("ring", "socket", "qdisc")


def _policy(s: Summary) -> list[tuple[str, str]]:
    """The user's policy (irqlab.policy): its calls, its settings (the last
    one's time) and its own numbers."""
    p = s.get("policy")
    if not p:
        return []
    rows = [("policy", f"{p['name']}: {_num(p['calls'], 0)} calls every {_num(p['period_us'], 0)} us, "
                       f"{_num(p['changes'], 0)} settings")]
    decisions = p.get("decisions") or []
    if decisions:
        last = decisions[-1]
        on = "all" if last.get("target") is None else f"#{last['target']}"
        rows.append(("  last setting", f"{last['knob']} = {last['value']} on {on} at {_num(last['time_us'] / 1e3, 3)} ms"))
    fields = p.get("fields") or {}
    if fields:
        def shown(v: Any) -> str:
            whole = isinstance(v, (int, float)) and math.isfinite(v) and v == int(v)
            return _num(v, 0 if whole else 3)

        rows.append(("  its fields", "   ".join(f"{k} {shown(v)}" for k, v in fields.items())))
    return rows


def summary_table(s: Summary, *, ascii_only: bool = False) -> str:
    """A summary as aligned ``label  value`` lines."""
    null = NULL_ASCII if ascii_only else NULL
    rows: list[tuple[str, str]] = [
        ("scenario", str(s.get("scenario") or _NA)),
        ("profile", str(s.get("profile") or "(none)")),
        ("seed", str(s.get("seed", _NA))),
        ("load", _load(s)),
        ("simulated", _unit(s.get("sim_time_s"), 3, "s")),
        ("throughput", _throughput(s)),
        ("latency (us)", _parts(s.get("latency_us"), _LATENCY, 1, null=null)),
        ("cpu (%)", _cpu(s.get("cpu_pct"))),
    ]
    if s.get("irq_cores_cpu_pct") is not None:
        rows.append(("irq cores cpu (%)", _cpu(s.get("irq_cores_cpu_pct"))))
    # A storage guest has no network device: its NIC rows would be zeros.
    network = not isinstance(s.get("storage"), Mapping)
    rows += [
        *([_irqs(s),
           ("packets/irq", _num(s.get("packets_per_irq"), 2)),
           ("softirqs/s", _num(s.get("softirqs_per_s"), 0)),
           ("watchdog fires/s", _num(s.get("watchdog_fires_per_s"), 0))] if network else []),
        *([("NAPI-thread wake-ups/s", _num(s.get("napi_thread_wakeups_per_s"), 0))]
          if s.get("napi_thread_wakeups_per_s") is not None else []),
        ("context switches", f"{_num(s.get('context_switches_per_s'), 0)} /s   "
                             f"{_num(s.get('context_switches_per_query'), 3)} /query"),
        ("cycles/query", _num(s.get("cycles_per_query"), 0)),
        # cpu.idle_states: the share of the cores' time in each idle state.
        *([("idle states (%)", _idle_states(s["idle_states"]))] if s.get("idle_states") else []),
        # The disruption model's perf-stat view of the application's cores.
        *([("IPC", f"{_num(s.get('ipc'), 3)}   {_num(s.get('instructions_per_query'), 0)} instructions/query")]
          if s.get("ipc") is not None else []),
        # The ITR paper's P_ll: busy cycles per query (packet) x mean latency.
        *([("load-latency product", f"{_num(s.get('load_latency_product'), 0)} cycles x us")]
          if s.get("load_latency_product") is not None else []),
        ("drops", _drops(s)),
        *([("retransmits", _num(s.get("retransmits"), 0))] if "retransmits" in s else []),
        *([("held at client", _num(s.get("held_at_client"), 0))] if s.get("held_at_client") else []),
        *([("busy-poll share", _unit(s.get("busy_poll_pct"), 1, "% of packets")),
           ("rx ring wait (us)", _num(s.get("rx_ring_wait_us"), 2))] if network else []),
        *_dim(s),
        *_vm(s),
        *_bulk(s),
        *_steering(s),
        *_storage(s),
        *_policy(s),
        ("requests completed", _num(s.get("requests_completed"), 0)),
        ("sim events", _num(s.get("sim_events"), 0)),
        ("wall time", _unit(s.get("wall_s"), 3, "s")),
        ("events/wall s", _events_rate(s.get("sim_events"), s.get("wall_s"))),
    ]
    return _aligned(rows)


def profiles_table(knobs: Mapping[str, Mapping[str, Any]]) -> str:
    """Knobs as rows, profiles as columns."""
    names = list(knobs)
    keys = list(next(iter(knobs.values()), {}))
    header = ["knob", *names]
    body = [[key, *(_toml(knobs[name].get(key)) for name in names)] for key in keys]
    return _columns([header, *body])


def bench_table(result: BenchResult) -> str:
    head = _aligned([
        ("scenario", result.scenario),
        ("profile", result.profile or "(none)"),
        ("simulated", _unit(result.duration_s, 3, "s per run, after warm-up")),
    ])
    runs = [["run", "sim events", "wall s", "events/wall s"]]
    for i, (s, rate) in enumerate(zip(result.runs, result.events_per_wall_s), start=1):
        runs.append([str(i), _num(s.sim_events, 0), _num(s.wall_s, 3), _si(rate)])
    tail = _aligned([
        ("best", f"{_si(result.best)} events/s"),
        ("median", f"{_si(result.median)} events/s"),
    ])
    return "\n".join([head, "", _columns(runs, right=(1, 2, 3)), "", tail])


def scale_table(rows: Sequence[ScaleRow], loads: Sequence[LoadRow]) -> str:
    """``irqlab bench --scale``'s two tables, each scale row with its ratio to
    the fewest cores of its profile."""
    fewest: dict[str, ScaleRow] = {}
    for r in rows:
        if r.profile not in fewest or r.cores < fewest[r.profile].cores:
            fewest[r.profile] = r
    out = [["cores", "profile", "simulated s", "events", "ns/event best", "median", "vs fewest cores"]]
    for r in rows:
        out.append(
            [
                str(r.cores),
                r.profile,
                f"{r.duration_s:.4f}",
                _num(r.sim_events, 0),
                f"{r.best_ns:.1f}",
                f"{r.median_ns:.1f}",
                f"{r.best_ns / fewest[r.profile].best_ns:.2f}x",
            ]
        )
    load = [["load", "QPS", "events/request", "modelled/request", "wall s"]]
    for l in loads:
        load.append(
            [
                f"{100 * l.fraction:.0f} %",
                _num(l.qps, 0),
                f"{l.events_per_request:.1f}",
                f"{l.modelled_per_request:.1f}",
                f"{l.wall_s:.3f}",
            ]
        )
    parts = [
        f"Cores ({CONNECTIONS_PER_CORE} client connections per core, closed loop, about "
        f"{EVENTS_PER_RUN:,} events per run):",
        "",
        _columns(out, right=(0, 2, 3, 4, 5, 6)),
    ]
    if loads:
        parts += [
            "",
            f"Busy-wait at {loads[0].cores} cores, events per request by load (100 % = the closed loop's throughput):",
            "",
            "(modelled: the events the model handled itself; the engine passes a polling core's empty polls)",
            "",
            _columns(load, right=(1, 2, 3, 4)),
        ]
    return "\n".join(parts)


# -- helpers ----------------------------------------------------------------


def _aligned(rows: Sequence[tuple[str, str]]) -> str:
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"{label:<{width}}  {value}".rstrip() for label, value in rows)


def _columns(rows: Sequence[Sequence[str]], right: Sequence[int] = ()) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for r in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _num(x: Any, digits: int) -> str:
    if x is None:
        return _NA
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    return f"{x:,.{digits}f}"


def _unit(x: Any, digits: int, unit: str) -> str:
    return _NA if x is None else f"{_num(x, digits)} {unit}"


def _parts(record: Any, names: Sequence[tuple[str, str]], digits: int, null: str = _NA) -> str:
    """``label value`` pairs; a value that is None (JSON null) is ``null``."""
    if not isinstance(record, Mapping):
        return _NA
    cells = []
    for label, key in names:
        value = record.get(key)
        cells.append(f"{label} {null if value is None else _num(value, digits):>7}")
    return "   ".join(cells)


def _drops(s: Summary) -> str:
    """The total, then where the packets were dropped when the core says."""
    total = _num(s.get("drops"), 0)
    sites = s.get("drops_by_site")
    if not isinstance(sites, Mapping):
        return total
    known = [f"{site} {_num(sites.get(site), 0)}" for site in _DROP_SITES if site in sites]
    other = [f"{site} {_num(n, 0)}" for site, n in sites.items() if site not in _DROP_SITES]
    return f"{total}   ({', '.join(known + other)})" if known or other else total


def _idle_states(states) -> str:
    """The idle states the cores spent time in: name, share of the cores' time."""
    parts = [f"{st.get('name')} {_num(st.get('residency_pct'), 1)}" for st in states
             if isinstance(st, Mapping) and (st.get("residency_pct") or 0) > 0]
    return "   ".join(parts) if parts else "none entered"


def _cpu(record: Any) -> str:
    names = [("user", "user"), ("system", "system"), ("softirq", "softirq"), ("irq", "irq"), ("idle", "idle")]
    # A VM's host cores run guest mode; its guest cores lose steal time.
    # Both fields are absent when zero.
    if isinstance(record, Mapping):
        names += [(k, k) for k in ("guest", "steal") if record.get(k)]
    return _parts(record, names, 1)


def _split(record: Any) -> str:
    """A host's time by what it was for (``vm.host_split_pct``)."""
    names = [("guest", "guest"), ("exits", "exit"), ("halt poll", "halt_poll"), ("vhost", "vhost"),
             ("irq", "irq"), ("softirq", "softirq"), ("other", "other"), ("idle", "idle")]
    return _parts(record, names, 1)


def _vm(s: Summary) -> list[tuple[str, str]]:
    """The virtualization layer's lines of a VM run (none on bare metal)."""
    vm = s.get("vm")
    if not isinstance(vm, Mapping):
        return []
    vms = vm.get("vms") or 1
    kind = str(vm.get("kind", _NA))
    rows = [
        ("vm", kind if vms == 1 else f"{kind}   {_num(vms, 0)} VMs"),
        ("host cpus busy", f"{_num(vm.get('host_busy_cpus'), 2)} of {_num(vm.get('host_cpus'), 0)}"),
        ("host vcpu cores cpu (%)", _cpu(vm.get("host_cpu_pct"))),
        ("  by what for (%)", _split(vm.get("host_split_pct"))),
    ]
    if vm.get("host_irq_cores_cpu_pct") is not None:
        rows.append(("host irq cores cpu (%)", _cpu(vm.get("host_irq_cores_cpu_pct"))))
        rows.append(("  by what for (%)", _split(vm.get("host_irq_cores_split_pct"))))
    rows += [
        ("vm exits/s", _num(vm.get("vm_exits_per_s"), 0)
         + (f"   {_num(vm.get('timer_exits_per_s'), 0)} for the idle tick"
            if vm.get("timer_exits_per_s") else "")),
        ("guest virtual irqs/s", f"{_num(vm.get('virtual_irqs_per_s'), 0)}   injected into the guest by KVM "
                                 "(device vectors and the guest's timers)"),
        ("vcpu halts/s", f"{_num(vm.get('halts_per_s'), 0)}   "
                         f"{_num(vm.get('halt_poll_success_pct'), 1)} % ended in the halt poll"),
    ]
    if vm.get("tx_kicks_per_s") is not None:
        rows.append(("tx notifications/s", _num(vm.get("tx_kicks_per_s"), 0)))
    return rows


def _throughput(s: Summary) -> str:
    """Queries per second, or for bulk TCP streams Gbit/s and segments."""
    bulk = s.get("bulk")
    if isinstance(bulk, Mapping):
        return f"{_num(bulk.get('throughput_gbps'), 2)} Gbit/s   {_num(s.get('throughput_qps'), 0)} segments/s"
    storage = s.get("storage")
    if isinstance(storage, Mapping):
        return f"{_num(storage.get('iops'), 0)} IOPS   {_num(storage.get('mb_per_s'), 1)} MB/s"
    return _unit(s.get("throughput_qps"), 0, "queries/s")


def _bulk(s: Summary) -> list[tuple[str, str]]:
    """The bulk TCP streams' lines (none for other workloads)."""
    bulk = s.get("bulk")
    if not isinstance(bulk, Mapping):
        return []
    busy = bulk.get("core_busy_pct") or []
    per_vm = bulk.get("vm_gbps") or []
    vm_rows = [("vm Gbit/s", "  ".join(f"{i}:{_num(g, 2)}" for i, g in enumerate(per_vm)))] if per_vm else []
    return vm_rows + [
        ("streams", _num(bulk.get("streams"), 0)),
        ("frames/gro packet", _num(bulk.get("frames_per_gro_packet"), 1)),
        ("tcp losses", f"{_num(bulk.get('losses'), 0)} segments   {_num(bulk.get('window_reductions'), 0)} window "
                       f"reductions   mean cwnd {_num(bulk.get('mean_cwnd_segments'), 0)} segments"),
        ("core busy (%)", _per_core(busy)),
    ] + _new_pages(bulk) + _readers(bulk)


def _new_pages(bulk: Mapping) -> list[tuple[str, str]]:
    """The frames whose buffer needed a new page
    (``nic.rx_buffer_reuse = "split-page"``)."""
    pct = bulk.get("rx_page_alloc_pct")
    return [] if pct is None else [("new rx pages", f"{_num(pct, 1)} % of frames")]


def _per_core(values: list) -> str:
    """Percentages by core, core 0 first."""
    return "  ".join(f"{i}:{_num(v, 0)}" for i, v in enumerate(values)) or _NA


def _readers(bulk: Mapping) -> list[tuple[str, str]]:
    """Where the readers ran, when the scheduler moved them
    (``cpu.task_placement = "fair"``)."""
    if not bulk.get("reader_migrations_per_s"):
        return []
    return [
        ("reader migrations", _unit(bulk.get("reader_migrations_per_s"), 0, "/s")),
        ("reader time (%)", _per_core(bulk.get("reader_core_pct") or [])),
    ]


def _storage(s: Summary) -> list[tuple[str, str]]:
    """The storage path's lines (none for other workloads)."""
    st = s.get("storage")
    if not isinstance(st, Mapping):
        return []
    rows = [
        ("commands in flight", f"{_num(st.get('mean_cif'), 1)} at a completion, on average"),
        ("cycles/io", f"{_num(st.get('cycles_per_io'), 0)} (all host cores)"),
        ("guest irqs/s", f"{_num(st.get('guest_irqs_per_s'), 0)}   virtual irqs fired {_num(st.get('virtual_irqs_per_s'), 0)}/s"
                         f"   hba irqs {_num(st.get('hba_irqs_per_s'), 0)}/s"),
        ("vmkernel ipis/s", f"{_num(st.get('ipis_per_s'), 0)} sent   {_num(st.get('ipis_deferred_per_s'), 0)} deferred   "
                            f"{_num(st.get('vm_wakeups_per_s'), 0)} halted VM woken"),
        ("vcpu halted", _unit(st.get("vcpu_halt_pct"), 1, "%")),
        ("hba core busy", _unit(st.get("hba_core_busy_pct"), 1, "%")),
        ("reply wait", _unit(st.get("reply_wait_us"), 1, "us")),
    ]
    if st.get("guest_ipis_per_s") is not None:
        rows.insert(3, ("guest ipis/s", f"{_num(st.get('guest_ipis_per_s'), 0)} (Windows' APC and dispatch IPIs, "
                                        "not among its interrupts)"))
    if st.get("transactions_per_s") is not None:
        rows.insert(0, ("transactions", f"{_num(st.get('transactions_per_s'), 0)}/s   "
                                        f"{_num(60 * float(st.get('transactions_per_s') or 0), 0)} per minute"))
    vic = st.get("vic")
    if isinstance(vic, Mapping):
        rows.append(("vic", f"mean R {_num(vic.get('mean_ratio'), 3)}   delivered {_num(vic.get('delivered_ratio'), 3)} "
                            f"per completion   {_num(vic.get('low_cif_pct'), 1)} % below cifThreshold"))
    return rows


def _steering(s: Summary) -> list[tuple[str, str]]:
    """Packet steering's lines (none when no scheme is set)."""
    st = s.get("steering")
    if not isinstance(st, Mapping):
        return []
    rows = [
        ("steering", str(st.get("scheme", _NA))),
        ("ipis/s", f"{_num(st.get('ipis_per_s'), 0)}   {_num(st.get('packets_per_ipi'), 2)} packets/ipi"),
        ("steered", f"{_num(st.get('steered_per_s'), 0)} packets/s   {_num(st.get('remote_pct'), 1)} % to another "
                    f"core   backlog drops {_num(st.get('backlog_drops'), 0)}"),
    ]
    iaps = st.get("iaps")
    if isinstance(iaps, Mapping):
        rows.append(("iaps cases (%)", f"previous core busy {_num(iaps.get('previous_busy_pct'), 1)}   new busy core "
                                       f"{_num(iaps.get('new_busy_pct'), 1)}   no busy core "
                                       f"{_num(iaps.get('no_busy_pct'), 1)}"))
    return rows


def _vm_kind(s: Summary) -> str:
    """``vm.kind`` of a VM run ("virtio", "passthrough", "sriov"), "" on bare metal."""
    vm = s.get("vm")
    return str(vm.get("kind") or "") if isinstance(vm, Mapping) else ""


def _irqs(s: Summary) -> tuple[str, str]:
    """The NIC's interrupts per second, said whose they are (issue 62, item
    17): in a VM run they are physical interrupts the host takes (the host
    NIC's under VirtIO, the assigned NIC's vectors otherwise), beside the
    guest's virtual ones (``vm.virtual_irqs_per_s``); and when the cores'
    irq time has other sources (the NAPI watchdog's hrtimer, steering's
    IPIs: ``IrqSrc`` in crates/irqlab-core/src/model/kernel/cpu.rs), so."""
    value = _num(s.get("irqs_per_s"), 0)
    kind = _vm_kind(s)
    if kind == "virtio":
        return "host nic irqs/s", f"{value}   physical: the host NIC's (the guest's are its virtual irqs/s)"
    if kind:
        return "nic irqs/s", f"{value}   physical: the assigned NIC's vectors (the guest's are its virtual irqs/s)"
    cpu = s.get("cpu_pct")
    irq_pct = cpu.get("irq") if isinstance(cpu, Mapping) else None
    steering = s.get("steering")
    others = [f"the NAPI watchdog's hrtimer ({_num(s.get('watchdog_fires_per_s'), 0)}/s)"
              if s.get("watchdog_fires_per_s") else "",
              f"steering's IPIs ({_num(steering.get('ipis_per_s'), 0)}/s)"
              if isinstance(steering, Mapping) and steering.get("ipis_per_s") else ""]
    others = [o for o in others if o]
    if isinstance(irq_pct, (int, float)) and irq_pct > 0 and others:
        return "irqs/s", f"{value}   the NIC's; irq in cpu (%) also counts {' and '.join(others)}"
    return "irqs/s", value


def _dim(s: Summary) -> list[tuple[str, str]]:
    """A line per direction whose completion queues run net DIM: the share
    of the measured time each profile (index, rx-usecs/rx-frames) was in
    force over all queues, and how often DIM changed profile. Under VirtIO
    the queues are the host NIC's (``vm.host_nic_coalescing``): the guest's
    virtio-net device has no coalescing, so the lines say whose they are."""
    dim = s.get("dim")
    if not isinstance(dim, Mapping):
        return []
    whose = "host nic " if _vm_kind(s) == "virtio" else ""
    lines = []
    for direction in ("rx", "tx"):
        d = dim.get(direction)
        if not isinstance(d, Mapping):
            continue
        profiles = d.get("profiles") or []
        shares = d.get("time_share_pct") or {}
        cells = []
        for ix, share in shares.items():
            p = profiles[int(ix)] if str(ix).isdigit() and int(ix) < len(profiles) else {}
            cells.append(f"{ix} ({p.get('usecs', '?')}us/{p.get('frames', '?')}): {_num(share, 1)}")
        cells.append(f"changes {_num(d.get('changes'), 0)}")
        lines.append((f"{whose}dim {direction} (% time)", "   ".join(cells)))
    return lines


def _load(s: Summary) -> str:
    mode = s.get("mode")
    offered = s.get("offered_qps")
    if mode == "open" and offered is not None:
        return f"open loop, {_num(offered, 0)} queries/s offered"
    return f"{mode} loop" if mode else _NA


def _events_rate(events: Any, wall: Any) -> str:
    if not isinstance(events, (int, float)) or not isinstance(wall, (int, float)) or wall <= 0:
        return _NA
    return f"{_si(events / wall)} events/s"


def _si(x: float) -> str:
    """``15.2 M`` style, for a unit to follow after a space."""
    for factor, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= factor:
            return f"{x / factor:.2f} {prefix}"
    return f"{x:.0f}"


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "-"
    return str(v)
